// A hand-written program that uses every opcode at least once and breaks no hardware rule of
// trn3 (NC-v4, which has every feature), synchronised so that the race checker
// finds nothing (tests/cpp/core/race_check_test.cc). docs/isa.md shows the same program.
#pragma once

inline constexpr const char* kEveryOpProgram = R"(# Every opcode once, valid and race-free on trn3.
.chip trn3
.seed 7
.semaphores 7                  # s0 loads, s1 transpose, s2 matmuls, s3 down, s4 dve, s5 pool, s6 C
.tensor A hbm bf16 [128, 512] input
.tensor B hbm bf16 [128, 512] input at=0x20000
.tensor C hbm fp32 [128, 512] output
.tensor S hbm fp32 [128, 512] scratch
.tensor G hbm fp32 [128, 512] scratch
.tensor V hbm fp32 [128, 512] scratch

.engine sp                     # the Sync engine starts the loads
  dma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] [[1,512]] queue=0 signal=s0+1
  dma_copy sbuf[0:128]+4096 [[1,512]] bf16 <- B[0:128] [[1,512]] bf16 queue=1 signal=s0+1
  dma_transpose sbuf[0:128]+8192 [[1,128]] bf16 <- A[0:128] [[1,128]] queue=2 signal=s1+1
  sem_wait wait=s4>=1            # dve's sum is in SBUF
  dma_copy C[0:128] [[1,512]] <- sbuf[0:128]+45056 [[1,512]] fp32 queue=3 signal=s6+1
  dma_copy sbuf[0:64]+49152 [[1,512]] fp32 <- hbm[0:64:512]+0x40000 [[1,512]] fp32 accumulate=true queue=255 rounding=rz wait=s6>=1 signal=s3-1

.engine pe
  sem_wait wait=s0>=2 wait=s1>=1
  load_stationary sbuf[0:128]+8192 [[1,128]] bf16
  multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128]+4096 [[1,512]] bf16 acc=first tile_rows=128
  transpose_pe psum[0:128]+2048 [[1,128]] bf16 <- sbuf[0:128]+8192 [[1,128]] bf16 transpose=true
  matmul_mx psum[0:64]+4096 [[1,128]] fp32 <- sbuf[0:128]+12288 [[1,256]] fp8_e4m3fn, sbuf[0:128]+16384 [[1,512]] fp8_e5m2, sbuf[0:128]+20480 [[1,64]] e8m0, sbuf[0:128]+24576 [[1,128]] e8m0 acc=last
  sem_signal signal=s2+1 name="matmuls done"

.engine act
  reg_set rd=r0 imm=0 wait=s0>=2
loop:
  activation sbuf[0:128]+28672 [[1,512]] bf16 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+32768 [[1,1]] fp32 func=gelu_apprx_tanh scale=0.5 bias=@2
  reg_alu rd=r0 ra=r0 op0=add imm=1
  branch target=loop ra=r0 op0=is_lt imm=4
  activation_reduce sbuf[0:128]+36864 [[1,512]] bf16, sbuf[0:128]+40960 [[1,1]] fp32 <- sbuf[0:128] [[1,512]] bf16 func=exp scale=-1.5 alpha=0.25 rounding=stochastic
  activate2 sbuf[0:128]+167936 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16 func=gelu op0=mult arg0=2 op1=subtract arg1=0.5 reverse1=true
  activate2_reduce sbuf[0:128]+169984 [[1,512]] bf16, sbuf[0:128]+171008 [[1,1]] fp32 <- sbuf[0:128] [[1,512]] bf16 func=exp op0=add arg0=1 reduce_op=abs_max
  tensor_scalar sbuf[0:64]+28672 [[1,512]] bf16 <- sbuf[64:128] [[1,512]] bf16, sbuf[64:128]+32768 [[1,1]] fp32 op0=mult arg0=0.125 op1=add arg1=@2
  tensor_copy sbuf[0:32]+61440 [[2,256]] bf16 <- sbuf[96:128] [[2,256]] bf16 wait=s4>=2
  nop

.engine dve
  sem_wait wait=s0>=2
  tensor_tensor sbuf[0:128]+45056 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+4096 [[1,512]] bf16 op0=add signal=s4+1
  tensor_scalar sbuf[64:128]+49152 [[1,512]] fp32 <- sbuf[0:64] [[1,512]] bf16 op0=mult arg0=1e-05 reverse0=true op1=max arg1=-inf
  scalar_tensor_tensor sbuf[0:128]+53248 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+4096 [[1,512]] bf16 op0=subtract arg0=1.5 op1=mult
  tensor_reduce sbuf[0:128]+57344 [[1,8]] fp32 <- sbuf[0:128] [[64,8],[1,64]] bf16 reduce_op=max reduce_axes=1
  tensor_copy sbuf[0:128]+61440 [[1,512]] fp32 <- psum[0:128] [[1,512]] fp32 wait=s2>=1 signal=s4+1
  tensor_tensor_scan sbuf[0:128]+65536 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+4096 [[1,512]] bf16 op0=mult op1=add arg0=0
  tensor_scalar_reduce sbuf[0:128]+69632 [[1,512]] fp32, sbuf[0:128]+73728 [[1,1]] fp32 <- sbuf[0:128] [[1,512]] bf16 op0=mult arg0=2 reduce_op=add
  tensor_scalar_cumulative sbuf[0:128]+164864 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16 op0=mult arg0=2 op1=max arg1=-inf
  memset sbuf[0:128]+77824 [[1,512]] bf16 value=-0
  select sbuf[0:128]+81920 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+4096 [[1,512]] bf16
  bn_stats sbuf[0:128]+86016 [[1,6]] fp32 <- sbuf[0:128] [[1,512]] bf16
  bn_aggr sbuf[0:128]+90112 [[1,2]] fp32 <- sbuf[0:128]+86016 [[1,6]] fp32
  reciprocal sbuf[0:128]+94208 [[1,512]] fp32 <- sbuf[0:128]+45056 [[1,512]] fp32 rounding=rne
  max8 sbuf[0:128]+98304 [[1,8]] bf16 <- sbuf[0:128] [[1,512]] bf16
  find_index8 sbuf[0:128]+151552 [[1,8]] uint32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+98304 [[1,8]] bf16
  match_replace8 sbuf[0:128]+152576 [[1,512]] bf16, sbuf[0:128]+153600 [[1,8]] uint16 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+98304 [[1,8]] bf16 value=-inf
  transpose_dve sbuf[32:64]+102400 [[1,32]] bf16 <- sbuf[0:32] [[1,32]] bf16
  stream_shuffle sbuf[0:128]+163840 [[1,512]] bf16 <- sbuf[0:128] [[1,512]] bf16 shuffle=31:30:29:28:27:26:25:255:23:22:21:20:19:18:17:16:15:14:13:12:11:10:9:8:7:6:5:4:3:2:1:0
  exponential sbuf[0:128]+106496 [[1,512]] fp32 <- sbuf[0:128]+45056 [[1,512]] fp32, sbuf[0:128]+32768 [[1,1]] fp32 arg0=@2
  quantize_mx sbuf[0:128]+110592 [[1,512]] fp8_e4m3fn, sbuf[0:128]+114688 [[1,128]] e8m0 <- sbuf[0:128] [[1,512]] bf16
  dropout sbuf[0:128]+156672 [[1,512]] bf16 <- sbuf[0:128] [[1,512]] bf16 arg0=0.25
  rand2 sbuf[0:128]+179392 [[1,64]] bf16 arg0=-1 arg1=3
  range_select sbuf[0:128]+157696 [[1,512]] fp32, sbuf[0:128]+159744 [[1,1]] fp32 <- sbuf[0:128]+45056 [[1,512]] fp32, sbuf[0:128]+32768 [[1,1]] fp32 op0=is_ge arg0=@3 op1=is_lt arg1=100 reduce_op=max iota_base=32 value=-inf

.engine pool
  iota sbuf[0:128]+118784 [[1,512]] int32 iota_base=-3 channel_multiplier=512
  affine_select sbuf[0:128]+122880 [[1,512]] fp32 <- sbuf[0:128]+45056 [[1,512]] fp32 op0=is_ge channel_multiplier=-1 value=-inf wait=s4>=1
  iota sbuf[0:128]+172032 [[1,64]] uint32
  n_gather sbuf[0:128]+171072 [[1,64]] bf16 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+172032 [[1,64]] uint32
  iota sbuf[0:128]+172288 [[1,4]] uint16 channel_multiplier=1
  local_gather sbuf[0:128]+172352 [[1,256]] bf16 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+172288 [[1,4]] uint16 elems=4
  sequence_bounds sbuf[0:1]+172864 [[1,1024]] fp32 <- sbuf[0:1]+45056 [[1,512]] fp32
  nonzero_with_count sbuf[0:128]+176960 [[1,513]] int32 <- sbuf[0:128]+45056 [[1,512]] fp32 iota_base=16 value=-1
  partition_reduce sbuf[0:1]+126976 [[1,512]] fp32 <- sbuf[0:128]+45056 [[1,512]] fp32 reduce_op=max
  memset sbuf[0:128]+131072 [[1,512]] fp32 value=3.25
  iota sbuf[0:128]+143360 [[1,1]] int32 channel_multiplier=1
  rand_seed sbuf[0:128]+143360 [[1,1]] int32
  reg_load sbuf[5:6]+143360 [[1,1]] int32 rd=r1
  tensor_copy sbuf[0:128]+180224 [[1,8]] fp32 <- sbuf[0:128]+131072+r1*4<=504 [[1,8]] fp32
  reg_store sbuf[0:1]+180256 [[1,1]] int32 ra=r1
  rand sbuf[0:128]+155648 [[1,64]] fp32
  rng sbuf[0:128]+179200 [[1,64]] uint16
  rand_get_state sbuf[0:128]+179328 [[1,6]] uint32
  tensor_tensor sbuf[0:128]+135168 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] bf16, sbuf[0:128]+4096 [[1,512]] bf16 op0=max signal=s5+1
  dma_copy S[0:128] [[1,512]] fp32 <- sbuf[0:128]+135168 [[1,512]] fp32 queue=16 wait=s5>=1
  dma_gather sbuf[0:128]+147456 [[1,512]] bf16 <- A[0:128] [[1,512]], sbuf[0:128]+143360 [[1,1]] int32 queue=18
  dma_scatter G[0:128] [[1,512]] <- sbuf[0:128]+135168 [[1,512]] fp32, sbuf[0:128]+143360 [[1,1]] int32 queue=19
  sendrecv sbuf[0:128]+139264 [[1,512]] fp32 <- sbuf[0:128]+135168 [[1,512]] fp32 queue=17 send_to=1 recv_from=1
  collective sbuf[0:128]+180288 [[1,512]] fp32 <- sbuf[0:128]+135168 [[1,512]] fp32 queue=20 kind=all_to_all
  collective_v V[0:64] [[1,512]], sbuf[0:1]+182336 [[1,6]] uint32 <- V[0:64]+32768 [[1,512]] queue=21 kind=all_to_all_v flags=1
  core_barrier
)";
