# Two loads into one tile on the same DMA queue, with no semaphore between them: both
# generations' write barriers land the second transfer's writes after the first's (every
# partition's piece of both transfers runs on the same DMA engine and queue), so this is
# race-free on trn1, trn2 and trn3. (On two queues it is a race: two_queues.s.)
.semaphores 1
.tensor A hbm bf16 [128, 512] input
.tensor B hbm bf16 [128, 512] input

.engine sp
  dma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] [[1,512]] queue=0
  dma_copy sbuf[0:128] [[1,512]] bf16 <- B[0:128] [[1,512]] queue=0
