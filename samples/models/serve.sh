#!/bin/bash
# DeepSeek-R1 W8A8 on 2 nodes x 8 Atlas 800I A2 NPUs (64 GB HBM each), vLLM + vllm-ascend.
# DP 2 (one engine per node) x TP 8, routed experts spread over all 16 NPUs (expert parallel), MTP with one draft token.
# This is node 0; node 1 runs the same with `--data-parallel-start-rank 1 --headless`.
export MODEL_PATH=/models/deepseek-r1-w8a8
export HCCL_BUFFSIZE=1024
export OMP_NUM_THREADS=10

vllm serve ${MODEL_PATH} \
  --served-model-name deepseek-r1 \
  --host 0.0.0.0 \
  --port 8000 \
  --data-parallel-size 2 \
  --data-parallel-size-local 1 \
  --data-parallel-address 10.0.0.1 \
  --data-parallel-rpc-port 13389 \
  --tensor-parallel-size 8 \
  --enable-expert-parallel \
  --quantization ascend \
  --max-model-len 32768 \
  --max-num-batched-tokens 8192 \
  --max-num-seqs 4 \
  --gpu-memory-utilization 0.92 \
  --trust-remote-code \
  --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'
