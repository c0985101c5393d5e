# Write-after-write between two engines: VectorE and GpSimd fill overlapping bytes.
# Race: dve[0] writes bytes 0-255 and pool[0] bytes 128-383 of partitions 0-127; they share
# bytes 128-255.
.chip trn2
.semaphores 1

.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=1

.engine pool
  memset sbuf[0:128]+128 [[1,64]] fp32 value=2
