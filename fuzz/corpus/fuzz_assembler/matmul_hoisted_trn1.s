# trnsim program (syntax: docs/isa.md)
.chip trn1
.seed 0
.semaphores 4
.tensor lhsT hbm bf16 [256, 128] input at=0x0
.tensor rhs hbm bf16 [256, 512] input at=0x10000
.tensor result hbm bf16 [128, 512] output at=0x50000

.engine pe
  load_stationary sbuf[0:128] [[1,128]] bf16 wait=s2>=1
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+1024 [[1,512]] bf16 acc=first wait=s2>=2
  load_stationary sbuf[0:128]+256 [[1,128]] bf16 wait=s3>=1
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+2048 [[1,512]] bf16 acc=last wait=s3>=2 signal=s0+1

.engine dve
  tensor_copy sbuf[0:128]+5120 [[1,512]] fp32 <- psum[0:128] [[1,512]] fp32 wait=s0>=1 signal=s1+1

.engine act
  dma_copy sbuf[0:128]+256 [[1,128]] bf16 <- lhsT[0:128]+16384 [[1,128]] bf16 queue=1 signal=s3+1
  dma_copy sbuf[0:128]+2048 [[1,512]] bf16 <- rhs[0:128]+65536 [[1,512]] bf16 queue=1 signal=s3+1

.engine pool
  dma_copy result[0:128] [[1,512]] bf16 <- sbuf[0:128]+5120 [[1,512]] fp32 queue=2 wait=s1>=1

.engine sp
  dma_copy sbuf[0:128] [[1,128]] bf16 <- lhsT[0:128] [[1,128]] bf16 signal=s2+1
  dma_copy sbuf[0:128]+1024 [[1,512]] bf16 <- rhs[0:128] [[1,512]] bf16 signal=s2+1
