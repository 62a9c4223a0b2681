"""The Python mirror of ops/csrc/params.h (ops.params.LAYOUTS) equals the compiled header's field lists."""
import ctypes

import numpy as np
import pytest

from ops import build, params


@pytest.mark.parametrize("layout", sorted(params.LAYOUTS))
def test_python_mirror_equals_header_layout(layout):
    lib = ctypes.CDLL(build.library_path())
    lib.LreluParamsLayout.restype = ctypes.c_int64
    buf = ctypes.create_string_buffer(512)
    size = lib.LreluParamsLayout(layout.encode(), buf, ctypes.c_int64(len(buf)))
    names = tuple(buf.value.decode().rstrip(",").split(","))
    assert names == params.LAYOUTS[layout]
    assert size == 4 * len(names) == params.pack(layout).asnumpy().nbytes


def test_pack_places_each_field_by_name_and_rejects_unknown_names():
    row = params.pack("bn_act", slope=0.2, momentum=0.9, threads=3).asnumpy().view(np.float32)
    fields = params.LAYOUTS["bn_act"]
    assert row[fields.index("slope")] == np.float32(0.2) and row[fields.index("momentum")] == np.float32(0.9)
    assert row[fields.index("threads")] == 3 and row[fields.index("gain")] == 0
    with pytest.raises(ValueError, match="'slop'.*not fields of the 'act' scalars layout"):
        params.pack("act", slop=0.2)
