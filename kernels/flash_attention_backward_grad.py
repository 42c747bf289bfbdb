"""`flash_attention_grad`: the FlashAttention forward for its stats, then the backward (a module
of its own: kernels.flash_attention re-exports the backward, so the backward's module does not
import the forward)."""
from __future__ import annotations

from .flash_attention import flash_attention_with_stats
from .flash_attention_backward import flash_attention_backward


def flash_attention_grad(q, k, v, dout, *, layout="BNSD", head_num=None, kv_head_num=None,
                         scale=None, causal=False, stream=None, **launch_options):
    """(dq, dk, dv) of sum(out * dout) for out = FlashAttention(q, k, v): the forward
    (`flash_attention_with_stats`) for out and its stats, then `flash_attention_backward`, both on
    `stream` for rt.DeviceArray inputs."""
    out, smax, ssum = flash_attention_with_stats(q, k, v, layout=layout, head_num=head_num,
                                                 kv_head_num=kv_head_num, scale=scale,
                                                 causal=causal, stream=stream, **launch_options)
    return flash_attention_backward(dout, q, k, v, out, smax, ssum, layout=layout,
                                    head_num=head_num, kv_head_num=kv_head_num, scale=scale,
                                    causal=causal, stream=stream, **launch_options)
