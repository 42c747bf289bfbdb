"""Without PyAV (the `video` extra), creating a VDEC channel says how to get it (200006), and the
rest of acl.media keeps working."""
import sys
import threading

import rt.acl as acl
from rt.errors import ACL_ERROR_FEATURE_UNSUPPORTED

m = acl.media


def test_vdec_without_pyav_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)          # `import av` raises ImportError
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ch = m.vdec_create_channel_desc()
    assert m.vdec_set_channel_desc_thread_id(ch, threading.get_ident()) == 0
    assert m.vdec_set_channel_desc_callback(ch, lambda *a: None) == 0
    assert m.vdec_create_channel(ch) == ACL_ERROR_FEATURE_UNSUPPORTED
    assert "VDEC/VENC need PyAV (FFmpeg's codecs): pip install 'ascend-emu[video]', got no " \
           "module named 'av'" in acl.get_recent_err_msg()
    assert m.vdec_destroy_channel_desc(ch) == 0          # no channel was left behind
    p, ret = m.dvpp_malloc(256)
    assert ret == 0 and m.dvpp_free(p) == 0
