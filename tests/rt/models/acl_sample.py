"""The Ascend pyACL model-sample flow (ResNet-50 sample style) with only the import changed.

Run as a script: python acl_sample.py model.om input.npy output.npy [async]
"""
import sys

import numpy as np

import rt.acl as acl

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2


def check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main(model_path, in_path, out_path, use_async):
    check(acl.init(), "init")
    check(acl.rt.set_device(0), "set_device")
    context, ret = acl.rt.create_context(0)
    check(ret, "create_context")
    stream, ret = acl.rt.create_stream()
    check(ret, "create_stream")
    work, weight, ret = acl.mdl.query_size(model_path)
    check(ret, "query_size")
    model_id, ret = acl.mdl.load_from_file(model_path)
    check(ret, "load_from_file")
    desc = acl.mdl.create_desc()
    check(acl.mdl.get_desc(desc, model_id), "get_desc")

    def make_dataset(n, size_of):
        ds = acl.mdl.create_dataset()
        ptrs = []
        for i in range(n):
            size = size_of(desc, i)
            ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "malloc")
            buf = acl.create_data_buffer(ptr, size)
            _, ret = acl.mdl.add_dataset_buffer(ds, buf)
            check(ret, "add_dataset_buffer")
            ptrs.append((ptr, size, buf))
        return ds, ptrs

    in_ds, ins = make_dataset(acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index)
    out_ds, outs = make_dataset(acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index)
    dims, ret = acl.mdl.get_output_dims(desc, 0)
    check(ret, "get_output_dims")
    x = np.load(in_path)
    ptr, size, _ = ins[0]
    check(acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(x), x.nbytes,
                        ACL_MEMCPY_HOST_TO_DEVICE), "memcpy H2D")
    if use_async:
        check(acl.mdl.execute_async(model_id, in_ds, out_ds, stream), "execute_async")
        check(acl.rt.synchronize_stream(stream), "synchronize_stream")
    else:
        check(acl.mdl.execute(model_id, in_ds, out_ds), "execute")
    y = np.empty(dims["dims"], np.float32)
    ptr, size, _ = outs[0]
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(y), y.nbytes, ptr, size,
                        ACL_MEMCPY_DEVICE_TO_HOST), "memcpy D2H")
    np.save(out_path, y)
    for ds, bufs in ((in_ds, ins), (out_ds, outs)):
        for ptr, _, buf in bufs:
            check(acl.destroy_data_buffer(buf), "destroy_data_buffer")
            check(acl.rt.free(ptr), "free")
        check(acl.mdl.destroy_dataset(ds), "destroy_dataset")
    check(acl.mdl.destroy_desc(desc), "destroy_desc")
    check(acl.mdl.unload(model_id), "unload")
    check(acl.rt.destroy_stream(stream), "destroy_stream")
    check(acl.rt.destroy_context(context), "destroy_context")
    check(acl.rt.reset_device(0), "reset_device")
    check(acl.finalize(), "finalize")
    print(f"sample ok: work={work} weight={weight} output dims={dims}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "async")
