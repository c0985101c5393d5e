# The twin of dma_vs_compute.s: the transfer itself signals when it completes.
.chip trn2
.semaphores 1
.tensor A hbm fp32 [128, 256] input

.engine sp
  dma_copy sbuf[0:128] [[1,256]] fp32 <- A[0:128] [[1,256]] queue=0 signal=s0+1

.engine act
  activation sbuf[0:128]+1024 [[1,256]] fp32 <- sbuf[0:128] [[1,256]] fp32 func=exp wait=s0>=1
