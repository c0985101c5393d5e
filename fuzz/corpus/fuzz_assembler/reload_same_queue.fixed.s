# The twin of reload_same_queue.s: the reload waits for the spill's completion, as trn1 needs.
.semaphores 2
.tensor T hbm fp32 [128, 256] scratch

.engine dve
  memset sbuf[0:128] [[1,256]] fp32 value=1 signal=s0+1

.engine sp
  dma_copy T[0:128] [[1,256]] <- sbuf[0:128] [[1,256]] fp32 queue=0 wait=s0>=1 signal=s1+1
  dma_copy sbuf[0:128]+1024 [[1,256]] fp32 <- T[0:128] [[1,256]] queue=0 wait=s1>=1
