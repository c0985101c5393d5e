# The twin of waw.s: GpSimd's fill lands after VectorE's.
.chip trn2
.semaphores 1

.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=1 signal=s0+1

.engine pool
  memset sbuf[0:128]+128 [[1,64]] fp32 value=2 wait=s0>=1
