# Write-after-read: GpSimd copies a buffer out while VectorE overwrites it.
# Race: pool[0] reads sbuf partitions 0-63 bytes 0-511, dve[0] writes them.
.chip trn2
.semaphores 1

.engine pool
  tensor_copy sbuf[0:64]+16384 [[1,128]] fp32 <- sbuf[0:64] [[1,128]] fp32

.engine dve
  memset sbuf[0:64] [[1,128]] fp32 value=1
