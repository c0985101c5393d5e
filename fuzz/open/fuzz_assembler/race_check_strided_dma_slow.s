# trnsim program (syntax: docs/isa.md)
.chip trn2
.seed 0
.semaphores 5
.tensor lhsT hbm bf16 [256, 256] input at=0x0
.tensor rhs hbm bf16 [256, 1024] input at=0x20000
.tensor result hbm bf16 [256, 1024] output at=0xa0000

.engine pe
  load_stationary sbuf[0:128]+2048 [[1,128]] bf16 wait=s2>=1
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+3072 [[1,512]] bf16 acc=first wait=s2>=2
  load_stationary sbuf[0:128]+2304 [[1,128]] bf16 wait=s3>=1
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+4096 [[1,512]] bf16 acc=last wait=s3>=2 signal=s0+1
  load_stationary sbuf[0:128]+2048 [[1,128]] bf16
  multiply_moving psum[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128]+5120 [[1,512]] bf16 acc=first wait=s2>=3
  load_stationary sbuf[0:128]+2304 [[1,128]] bf16
  multiply_moving psum[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128]+6144 [[1,512]] bf16 acc=last wait=s3>=3 signal=s0+1
  load_stationary sbuf[0:128]+2560 [[1,128]] bf16
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+3072 [[1,512]] bf16 acc=first wait=s1>=1
  load_stationary sbuf[0:128]+2816 [[1,128]] bf16
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+4096 [[1,512]] bf16 acc=last signal=s0+1
  load_stationary sbuf[0:128]+2560 [[1,128]] bf16
  multiply_moving psum[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128]+5120 [[1,512]] bf16 acc=first wait=s0>=2
  load_stationary sbuf[0:128]+2816 [[1,128]] bf16
  multiply_moving psum[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128]+6144 [[1,512]] bf16 acc=last signal=s0+1

.engine dve
  tensor_copy sbuf[0:128] [[1,512]] bf16 <- psum[0:128] [[1,512]] fp32 wait=s0>=1 signal=s1+1
  tensor_copy sbuf[0:128]+1024 [[1,512]] bf16 <- psum[0:128]+2048 [[1,512]] fp32 wait=s0>=2 signal=s1+1
  tensor_copy sbuf[0:128] [[1,512]] bf16 <- psum[0:128] [[1,512]] fp32 wait=s0>=3 wait=s4>=1 signal=s1+1
  tensor_copy sbuf[0:128]+3024 [[1,512]] bf16 <- psum[0:128]+2048 [[1,512]] fp32 wait=s0>=4 wait=s4>=2 signal=s1+1

.engine act
  dma_copy sbuf[0:128]+2304 [[1,128]] bf16 <- lhsT[0:128]+32768 [[1,128]] bf16 queue=1 signal=s3+1
  dma_copy sbuf[0:128]+2816 [[1,128]] bf16 <- lhsT[0:128]+32896 [[1,128]] bf16 queue=1
  dma_copy sbuf[0:128]+4096 [[1,512]] bf16 <- rhs[0:128]+131072 [[1,512]] bf16 queue=0 signal=s3+1
  dma_copy sbuf[0:128]+6144 [[1,512]] bf16 <- rhs[0:128]+131584 [[1,512]] bf16 queue=1 signal=s3+1

.engine pool
  dma_copy result[0:128] [[1,512]] bf16 <- sbuf[0:128] [[1,512]] bf16 queue=2 wait=s1>=1 signal=s4+1
  dma_copy result[0:128]+512 [[5,512]] bf16 <- sbuf[0:128]+1024 [[1,512]] bf16 queue=2 wait=s0>=2 signal=s4+1
  dma_copy result[0:128]+131072 [[1,512]] bf16 <- sbuf[0:128] [[1,512]] bf16 queue=2 wait=s1>=3
  dma_copy result[0:128]+131584 [[1,512]] bf16 <- sbuf[0:128]+1024 [[1,512]] bf16 queue=2 wait=s1>=4

.engine sp
  dma_copy sbuf[0:128]+2048 [[1,128]] bf16 <- lhsT[0:128] [[1,128]] bf16 signal=s2+1
  dma_copy sbuf[0:128]+2560 [[1,128]] bf16 <- lhsT[0:128]+128 [[1,128]] bf16
  dma_copy sbuf[0:128]+3072 [[1,512]] bf16 <- rhs[0:128] [[1,512]] bf16 signal=s2+1
  dma_copy sbuf[0:128]+5120 [[1,512]] bf16 <- rhs[0:128]+512 [[1,512]] bf16 signal=s2+1
