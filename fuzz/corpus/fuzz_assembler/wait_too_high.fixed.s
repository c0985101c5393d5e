# The twin of wait_too_high.s: ScalarE waits for the one signal there is.
.chip trn2
.semaphores 1

.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=0 signal=s0+1

.engine act
  activation sbuf[0:128]+256 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 func=exp wait=s0>=1
