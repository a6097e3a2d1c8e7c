"""What vLLM TPU stores of a KV cache beyond the model's own K and V: its attention kernels' layout.

tpu-inference 0.32.0 (the vLLM TPU the serving job runs: accel/job/runtime.yaml vllm_tpu; PyPI wheel
tpu_inference-0.32.0-py3-none-any.whl, read 2026-11-27) sizes each layer's cache page from the kernel's own cache
shape (runner/kv_cache.py l.200-220 get_attention_page_size_bytes over get_kv_cache_shape_with_mesh l.51-91, which
takes one device's heads and multiplies the head axis by the devices), after padding the head width
(runner/kv_cache_manager.py l.204-209, l.566-568, l.683-687: utils.get_padded_head_dim) and the KV heads to the
tensor-parallel devices (the same lines: utils.get_padded_num_heads, InferenceModel.kv_copies' rule). Per device:
- a head width other than 64 is padded to a multiple of 128 lanes (utils.py l.33 TPU_HEAD_SIZE_ALIGNMENT = 128,
  l.325-331 get_padded_head_dim), and the cache shape is (pages, page size, align(2 x heads, packing) / packing,
  packing, align(head_dim, 128)) (kernels/ragged_paged_attention/v3/kernel.py l.261-275): K and V of each head as
  2 x heads rows, rounded up to the values one 32-bit word packs (util.py l.32-34: 32 // bits, 2 at bf16, 4 at fp8);
- a head width of 64 is kept (get_padded_head_dim's exception, "kernel specificly optimized for it") and its kernel
  stores each head's K and V side by side in one 128-lane row: (pages, page size, align(heads, packing) / packing,
  packing, 128) (kernels/ragged_paged_attention/v3/kernel_hd64.py l.236-251; layers/common/attention_backend.py
  l.85-101 picks it for head_dim 64), so its heads round up to the packing;
- a multi-latent cache pads its latent and its rotary key to 128 lanes each (runner/kv_cache_manager.py l.506-516:
  align_to(kv_lora_rank, 128) + align_to(qk_rope_head_dim, 128)).
The heads and width here are what a device holds: the estimate's whole-head count per device (kv_copies) goes in.
"""

from __future__ import annotations

LANES = 128                 # utils.py l.33 TPU_HEAD_SIZE_ALIGNMENT; the MLA and RPA kernels align to the same 128
PACKED_HEAD_DIM = 64        # utils.py l.328-330: the one width kept unpadded, served by kernel_hd64.py


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


def packing(kv_bytes_per_value: float) -> int:
    """K/V values one 32-bit word holds: 2 at bf16, 4 at fp8 (ragged_paged_attention/v3/util.py l.32-34)."""
    return max(1, int(4 // kv_bytes_per_value))


def padded_head_dim(head_dim: int) -> int:
    """The head width vLLM TPU stores: 64 kept, any other rounded up to 128 lanes (utils.py l.325-331)."""
    return head_dim if head_dim == PACKED_HEAD_DIM else _align(head_dim, LANES)


def width_factor(head_dim: int) -> float:
    """Stored over the model's head width: 1 at 64, 128 and its multiples; 1.5 at 80 (-> 128), 4/3 at 96, 4/3 at 192."""
    return padded_head_dim(head_dim) / head_dim


def latent_width_factor(kv_lora_rank: int, qk_rope_head_dim: int) -> float:
    """Stored over the model's multi-latent width: each part to 128 lanes (DeepSeek-V3: 512 + 64 -> 640, 10/9)."""
    return (_align(kv_lora_rank, LANES) + _align(qk_rope_head_dim, LANES)) / (kv_lora_rank + qk_rope_head_dim)


def heads_stored(heads: int, head_dim: int, kv_bytes_per_value: float) -> int:
    """The KV heads' worth of slots one device stores for its `heads` (of `head_dim`, each value
    `kv_bytes_per_value` bytes): K and V rows rounded up to the packing (2 x heads to it, so whole heads), or at
    head_dim 64 the heads themselves (one 128-lane row holds a head's K and V). bf16 at 128: its heads; fp8 at 128,
    one head a device: 2; bf16 at 64, one head a device: 2."""
    word = packing(kv_bytes_per_value)
    if head_dim == PACKED_HEAD_DIM:
        return _align(heads, word)
    return _align(2 * heads, word) // 2
