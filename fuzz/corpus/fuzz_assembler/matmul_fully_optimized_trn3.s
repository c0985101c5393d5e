# trnsim program (syntax: docs/isa.md)
.chip trn3
.seed 0
.semaphores 4
.tensor lhsT hbm bf16 [128, 128] input at=0x0
.tensor rhs hbm bf16 [128, 512] input at=0x8000
.tensor result hbm bf16 [128, 512] output at=0x28000

.engine pe
  load_stationary sbuf[0:128]+2048 [[1,128]] bf16 wait=s3>=1
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16 wait=s2>=1 signal=s0+1

.engine dve
  memset sbuf[0:128]+2560 [[1,512]] bf16
  tensor_tensor sbuf[0:128]+2560 [[1,512]] bf16 <- sbuf[0:128]+2560 [[1,512]] bf16, psum[0:128] [[1,512]] fp32 op0=add wait=s0>=1 signal=s1+1

.engine act
  dma_copy sbuf[0:128]+2048 [[1,128]] bf16 <- lhsT[0:128] [[1,128]] bf16 queue=1 signal=s3+1

.engine pool
  dma_copy result[0:128] [[1,512]] bf16 <- sbuf[0:128]+2560 [[1,512]] bf16 queue=2 wait=s1>=1

.engine sp
  dma_copy sbuf[0:128] [[1,512]] bf16 <- rhs[0:128] [[1,512]] bf16 signal=s2+1
