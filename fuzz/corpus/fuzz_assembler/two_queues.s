# Two DMA queues write the same bytes: loads of A on queue 0 and of B on queue 1 land in the
# same SBUF tile, and nothing says which lands last.
# Race (write-after-write): sp[0] and sp[1] both write sbuf partitions 0-127 bytes 0-1023.
.chip trn2
.semaphores 1
.tensor A hbm bf16 [128, 512] input
.tensor B hbm bf16 [128, 512] input

.engine sp
  dma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] [[1,512]] queue=0
  dma_copy sbuf[0:128] [[1,512]] bf16 <- B[0:128] [[1,512]] queue=1
