"""STUB: to be replaced by its implementation."""


def _todo(*a, **k):
    raise NotImplementedError


subscribe_report = _todo
unsubscribe_report = _todo
launch_callback = _todo
process_report = _todo
