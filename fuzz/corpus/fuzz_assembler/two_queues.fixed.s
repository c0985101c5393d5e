# The twin of two_queues.s: the second load starts once the first has landed.
.chip trn2
.semaphores 1
.tensor A hbm bf16 [128, 512] input
.tensor B hbm bf16 [128, 512] input

.engine sp
  dma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] [[1,512]] queue=0 signal=s0+1
  dma_copy sbuf[0:128] [[1,512]] bf16 <- B[0:128] [[1,512]] queue=1 wait=s0>=1
