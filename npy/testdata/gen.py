# gen.py writes the golden .npy files in this directory with NumPy itself
# (np.save and numpy.lib.format.write_array). They are the reference the Go
# reader and writer are checked against, so the Go tests never rewrite them.
# Made with NumPy 1.24.2:  python3 gen.py
import numpy as np
from numpy.lib import format as fmt

def save(name, a):
    np.save(name, a)

save("f4_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3))
save("f4_scalar.npy", np.array(1.5, dtype="<f4"))
save("f4_empty.npy", np.zeros((0, 3), dtype="<f4"))
save("f4_1d.npy", np.array([-1.0, 0.5, 3.25], dtype="<f4"))
save("i4_2x2.npy", np.array([[1, -2], [3, 2147483647]], dtype="<i4"))
save("i8_3.npy", np.array([-9007199254740993, 0, 42], dtype="<i8"))
save("b1_4.npy", np.array([True, False, False, True]))
save("f8_2.npy", np.array([0.1, -2.5], dtype="<f8"))
save("u1_3.npy", np.array([0, 128, 255], dtype="|u1"))
save("i1_3.npy", np.array([-128, 0, 127], dtype="|i1"))
save("f2_2.npy", np.array([1.0, -2.0], dtype="<f2"))
save("f4_4d.npy", np.arange(120, dtype="<f4").reshape(1, 2, 3, 20))
save("i8_big.npy", np.arange(123456789012, 123456789012 + 2, dtype="<i8").reshape(1, 2))
# 15 dims: NumPy's growth-axis padding (21 - len(repr(shape[0])) spaces
# after the dict) pushes this header from 128 to 192 bytes.
save("f4_15d.npy", np.full((1,) * 15, 7.0, dtype="<f4"))

with open("f4_v2.npy", "wb") as f:
    fmt.write_array(f, np.arange(4, dtype="<f4"), version=(2, 0))
with open("f4_v3.npy", "wb") as f:
    fmt.write_array(f, np.arange(4, dtype="<f4"), version=(3, 0))

# Rejected on read.
save("f4_bigendian.npy", np.arange(3, dtype=">f4"))
save("f4_fortran.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
save("c8_2.npy", np.array([1 + 2j, 3], dtype="<c8"))
save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
