# trnsim program (syntax: docs/isa.md)
.chip trn2
.seed 0
.semaphores 7
.tensor qT hbm bf16 [64, 128] input at=0x0
.tensor kT hbm bf16 [64, 128] input at=0x4000
.tensor v hbm bf16 [128, 64] input at=0x8000
.tensor out hbm fp32 [128, 64] output at=0xc000

.engine pe
  load_stationary sbuf[0:64]+384 [[1,128]] bf16 wait=s6>=1
  multiply_moving psum[0:128] [[1,128]] fp32 <- sbuf[0:64] [[1,128]] bf16 wait=s4>=1 signal=s0+1
  transpose_pe psum[0:128]+1024 [[1,128]] fp32 <- sbuf[0:128]+1920 [[1,128]] bf16 wait=s2>=2 signal=s0+1
  load_stationary sbuf[0:128]+2432 [[1,128]] bf16 wait=s1>=2
  multiply_moving psum[0:128]+2048 [[1,64]] fp32 <- sbuf[0:128]+256 [[1,64]] bf16 wait=s5>=1 signal=s0+1

.engine dve
  memset sbuf[0:128]+3456 [[1,1]] fp32 value=-3.0000000054977558e+38
  memset sbuf[0:128]+3480 [[1,1]] fp32
  memset sbuf[0:128]+2944 [[1,64]] fp32
  tensor_reduce sbuf[0:128]+3468 [[1,1]] fp32 <- sbuf[0:128]+896 [[1,1],[1,128]] fp32 reduce_op=max reduce_axes=1 wait=s3>=1
  tensor_tensor sbuf[0:128]+3464 [[1,1]] fp32 <- sbuf[0:128]+3456 [[1,1]] fp32, sbuf[0:128]+3468 [[1,1]] fp32 op0=max
  tensor_scalar sbuf[0:128]+3460 [[1,1]] fp32 <- sbuf[0:128]+3464 [[1,1]] fp32 op0=mult arg0=-1 signal=s1+1
  scalar_tensor_tensor sbuf[0:128]+3480 [[1,1]] fp32 <- sbuf[0:128]+3480 [[1,1]] fp32, sbuf[0:128]+3472 [[1,1]] fp32, sbuf[0:128]+3476 [[1,1]] fp32 op0=mult arg0=@3 op1=add wait=s2>=3
  tensor_copy sbuf[0:128]+3456 [[1,1]] fp32 <- sbuf[0:128]+3464 [[1,1]] fp32
  tensor_copy sbuf[0:128]+2432 [[1,128]] bf16 <- psum[0:128]+1024 [[1,128]] fp32 wait=s0>=2 signal=s1+1
  scalar_tensor_tensor sbuf[0:128]+2944 [[1,64]] fp32 <- sbuf[0:128]+2944 [[1,64]] fp32, psum[0:128]+2048 [[1,64]] fp32, sbuf[0:128]+3476 [[1,1]] fp32 op0=mult arg0=@3 op1=add wait=s0>=3
  reciprocal sbuf[0:128]+3484 [[1,1]] fp32 <- sbuf[0:128]+3480 [[1,1]] fp32
  tensor_scalar sbuf[0:128]+2944 [[1,64]] fp32 <- sbuf[0:128]+2944 [[1,64]] fp32, sbuf[0:128]+3484 [[1,1]] fp32 op0=mult arg0=@2 signal=s1+1

.engine act
  activation sbuf[0:128]+896 [[1,128]] fp32 <- psum[0:128] [[1,128]] fp32 scale=0.125 wait=s0>=1 signal=s2+1
  activation_reduce sbuf[0:128]+1920 [[1,128]] bf16, sbuf[0:128]+3472 [[1,1]] fp32 <- sbuf[0:128]+896 [[1,128]] fp32, sbuf[0:128]+3460 [[1,1]] fp32 func=exp bias=@3 wait=s1>=1 signal=s2+1
  activation sbuf[0:128]+3476 [[1,1]] fp32 <- sbuf[0:128]+3456 [[1,1]] fp32, sbuf[0:128]+3460 [[1,1]] fp32 func=exp bias=@2 signal=s2+1

.engine pool
  affine_select sbuf[0:128]+896 [[1,128]] fp32 <- sbuf[0:128]+896 [[1,128]] fp32 op0=is_le channel_multiplier=-1 value=-3.0000000054977558e+38 wait=s2>=1 signal=s3+1
  dma_copy out[0:128] [[1,64]] fp32 <- sbuf[0:128]+2944 [[1,64]] fp32 queue=2 wait=s1>=3

.engine sp
  dma_copy sbuf[0:64] [[1,128]] bf16 <- kT[0:64] [[1,128]] bf16 signal=s4+1
  dma_copy sbuf[0:128]+256 [[1,64]] bf16 <- v[0:128] [[1,64]] bf16 signal=s5+1
  dma_copy sbuf[0:64]+384 [[1,128]] bf16 <- qT[0:64] [[1,128]] bf16 queue=128 signal=s6+1
