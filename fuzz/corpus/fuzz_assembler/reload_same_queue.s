# A spill and a reload on one DMA queue, with no semaphore between them. Whether the reload
# sees the spill depends on the generation's DMA write barrier (spec core.dma.write_barrier):
# on trn1 ("write-after-write") a transfer may read before the earlier transfer's writes land,
# so sp[0] writes and sp[1] reads hbm tensor T bytes 0-131071 unordered (read-after-write);
# on trn2 and trn3 ("strong-order-write") the ring makes the writes visible first: no race.
.semaphores 1
.tensor T hbm fp32 [128, 256] scratch

.engine dve
  memset sbuf[0:128] [[1,256]] fp32 value=1 signal=s0+1

.engine sp
  dma_copy T[0:128] [[1,256]] <- sbuf[0:128] [[1,256]] fp32 queue=0 wait=s0>=1
  dma_copy sbuf[0:128]+1024 [[1,256]] fp32 <- T[0:128] [[1,256]] queue=0
