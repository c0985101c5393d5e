# trnsim program (syntax: docs/isa.md)
.chip trn1
.seed 0
.semaphores 3
.tensor x hbm fp32 [128, 64] input at=0x0
.tensor gamma hbm fp32 [64] input at=0x8000
.tensor y hbm fp32 [128, 64] output at=0x9000

.engine dve
  scalar_tensor_tensor sbuf[0:128]+768 [[1,64]] fp32 <- sbuf[0:128]+256 [[1,64]] fp32, sbuf[0:128] [[1,64]] fp32, sbuf[0:128]+1284 [[1,1]] fp32 op0=mult arg0=@3 op1=mult wait=s1>=1 signal=s0+1

.engine act
  activation_reduce sbuf[0:128]+768 [[1,64]] fp32, sbuf[0:128]+1280 [[1,1]] fp32 <- sbuf[0:128]+256 [[1,64]] fp32 func=square wait=s2>=1
  activation sbuf[0:128]+1284 [[1,1]] fp32 <- sbuf[0:128]+1280 [[1,1]] fp32 func=rsqrt scale=0.015625 bias=1e-06 signal=s1+1

.engine pool
  dma_copy y[0:128] [[1,64]] fp32 <- sbuf[0:128]+768 [[1,64]] fp32 queue=2 wait=s0>=1

.engine sp
  dma_copy sbuf[0:128] [[1,64]] fp32 <- gamma[0:128:0] [[1,64]] fp32
  dma_copy sbuf[0:128]+256 [[1,64]] fp32 <- x[0:128] [[1,64]] fp32 signal=s2+1
