# The twin of raw_missing_wait.s: ScalarE signals when its result is written, VectorE waits.
.chip trn2
.semaphores 1

.engine act
  activation sbuf[0:128] [[1,256]] fp32 <- sbuf[0:128]+4096 [[1,256]] fp32 func=exp signal=s0+1

.engine dve
  tensor_copy sbuf[0:128]+8192 [[1,256]] fp32 <- sbuf[0:128] [[1,256]] fp32 wait=s0>=1
