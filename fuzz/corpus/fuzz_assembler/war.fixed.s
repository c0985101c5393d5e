# The twin of war.s: VectorE overwrites the buffer only once GpSimd has copied it out.
.chip trn2
.semaphores 1

.engine pool
  tensor_copy sbuf[0:64]+16384 [[1,128]] fp32 <- sbuf[0:64] [[1,128]] fp32 signal=s0+1

.engine dve
  memset sbuf[0:64] [[1,128]] fp32 value=1 wait=s0>=1
