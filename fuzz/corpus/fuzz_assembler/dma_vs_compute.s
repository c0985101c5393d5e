# DMA against compute: the Sync engine signals after it has *triggered* the load, not when the
# transfer completes, so ScalarE may read the tile before the DMA has written it.
# Race: sp[0]'s transfer writes sbuf partitions 0-127 bytes 0-1023, act[0] reads them.
.chip trn2
.semaphores 1
.tensor A hbm fp32 [128, 256] input

.engine sp
  dma_copy sbuf[0:128] [[1,256]] fp32 <- A[0:128] [[1,256]] queue=0
  sem_signal signal=s0+1

.engine act
  activation sbuf[0:128]+1024 [[1,256]] fp32 <- sbuf[0:128] [[1,256]] fp32 func=exp wait=s0>=1
