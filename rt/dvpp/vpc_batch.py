"""VPC batch operations (`acldvppVpcBatchCropAsync`, `acldvppVpcBatchCropAndPasteAsync`,
`acldvppVpcBatchCropResizePasteAsync`): many crops of many pictures as one VPC task, each crop
done exactly as the single call does it (`rt.dvpp.ops.crop_and_paste`), checked with the same
rules, in order.
"""
from __future__ import annotations

from ..sched import Task
from ..stream import Stream
from . import formats as F
from . import rules as R
from .desc import BatchPicDesc, ChannelDesc, PicDesc, ResizeConfig, RoiConfig
from .formats import bad
from .ops import (channel_of, crop_and_paste, guard, live_obj, stream_of, submit,
                  vpc_rules)

check_vpc_pic, check_pair, check_roi, check_scale, is_nearest = vpc_rules()


def _pics(x, api: str, role: str) -> list:
    if isinstance(x, BatchPicDesc):
        x.live(api, role)
        return list(x.pics)
    if isinstance(x, (list, tuple)) and x:
        return [live_obj(d, PicDesc, api, f"{role}[{k}]") for k, d in enumerate(x)]
    raise bad(api, f"{role} must be a batch pic desc or a non-empty list of pic descs, got "
                   f"{role}={x!r}")


def _counts(api: str, roi_nums, n_src: int) -> list:
    nums = list(roi_nums) if isinstance(roi_nums, (list, tuple)) else None
    if not nums or len(nums) != n_src or any(
            isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in nums):
        raise bad(api, f"roi_nums must list one count >= 0 per source picture ({n_src}), got "
                       f"roi_nums={roi_nums!r}")
    if sum(nums) > F.MAX_BATCH_ROIS:
        raise bad(api, f"sum(roi_nums) must be <= {F.MAX_BATCH_ROIS}, got {sum(nums)}")
    return nums


def _areas(api: str, role: str, areas, total: int, n_dst: int) -> list:
    got = list(areas) if isinstance(areas, (list, tuple)) else []
    if total != n_dst or total != len(got):
        raise bad(api, f"sum(roi_nums) must equal the number of destination pictures and of "
                       f"{role}s, got sum={total}, {n_dst} destination(s), {len(got)} {role}(s)")
    return [live_obj(a, RoiConfig, api, f"{role}s[{j}]") for j, a in enumerate(got)]


def _batch(api: str, name: str, channel, src_batch, roi_nums, dst_batch, crop_areas,
           paste_areas, resize_config, stream) -> Task:
    ch = channel_of(channel, api, "VPC")
    s = stream_of(stream, api)
    if resize_config is not None:
        live_obj(resize_config, ResizeConfig, api, "resize_config")
    nearest = is_nearest(resize_config)
    srcs = _pics(src_batch, api, "src_batch_pic_descs")
    dsts = _pics(dst_batch, api, "dst_batch_pic_descs")
    nums = _counts(api, roi_nums, len(srcs))
    total = sum(nums)
    crops = _areas(api, "crop area", crop_areas, total, len(dsts))
    pastes = _areas(api, "paste area", paste_areas, total, len(dsts)) \
        if paste_areas is not None else None
    src_snaps = [d.snapshot() for d in srcs]
    rules = R.for_device(ch.device)
    for k, d in enumerate(src_snaps):
        check_vpc_pic(api, f"src_batch_pic_descs[{k}]", d, False, rules)
    jobs = []
    j = 0
    for k, cnt in enumerate(nums):
        src = src_snaps[k]
        yuv = src.format in F.YUV420SP
        for _ in range(cnt):
            role = f"dst_batch_pic_descs[{j}]"
            o = dsts[j].live(api, role).snapshot()
            r = crops[j]
            check_vpc_pic(api, role, o, True, rules)
            check_pair(api, src, o)
            check_roi(api, f"crop_areas[{j}]", r, src.width, src.height, yuv, rules)
            if pastes is None:
                dst = (0, 0, o.width, o.height)
            else:
                p = pastes[j]
                check_roi(api, f"paste_areas[{j}]", p, o.width, o.height, yuv, rules, paste=True,
                           pic="output picture")
                dst = (p.left, p.top, p.width, p.height)
            check_scale(api, f"crop {j}", r.width, r.height, dst[2], dst[3])
            jobs.append((src, (r.left, r.top, r.width, r.height), o, dst))
            j += 1

    def run():
        for src, crop, o, dst in jobs:
            crop_and_paste(src, crop, o, dst, nearest, api)

    nbytes = sum(F.frame_size(o.format, o.width_stride, o.height_stride) for _, _, o, _ in jobs)
    return submit(s, ch, "VPC", api, name, guard(dsts, run), [d.data for d in src_snaps],
                   [o.data for _, _, o, _ in jobs], nbytes, {"rois": total})


def vpc_batch_crop_async(channel: ChannelDesc, src_batch, roi_nums, dst_batch, crop_areas,
                         stream: Stream | None = None) -> Task:
    """Mirrors `acldvppVpcBatchCropAsync(channel, srcBatch, roiNums, size, dstBatch, cropAreas,
    stream)`: picture k of `src_batch` gives `roi_nums[k]` crops, in order, each scaled to its
    destination picture's size; sum(roi_nums) = len(dst_batch) = len(crop_areas) <= 256."""
    return _batch("dvpp_vpc_batch_crop_async", "vpc_batch_crop", channel, src_batch, roi_nums,
                  dst_batch, crop_areas, None, None, stream)


def vpc_batch_crop_and_paste_async(channel: ChannelDesc, src_batch, roi_nums, dst_batch,
                                   crop_areas, paste_areas, stream: Stream | None = None,
                                   resize_config: ResizeConfig | None = None) -> Task:
    """Mirrors `acldvppVpcBatchCropAndPasteAsync` (with `resize_config`:
    `acldvppVpcBatchCropResizePasteAsync`): crop j (of source k, `roi_nums[k]` crops per
    source, in order) is scaled to `paste_areas[j]`'s size and written there in destination j;
    the rest of each destination is left as it was. sum(roi_nums) = len(dst_batch) =
    len(crop_areas) = len(paste_areas) <= 256."""
    api = "dvpp_vpc_batch_crop_resize_paste_async" if resize_config is not None else \
        "dvpp_vpc_batch_crop_and_paste_async"
    if not isinstance(paste_areas, (list, tuple)):
        raise bad(api, f"paste_areas must be a list of roi configs, got "
                       f"paste_areas={paste_areas!r}")
    return _batch(api, "vpc_batch_crop_and_paste", channel, src_batch, roi_nums, dst_batch,
                  crop_areas, paste_areas, resize_config, stream)
