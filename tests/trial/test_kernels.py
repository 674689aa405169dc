"""The CPU kernels a result records (sensitivity.trial.kernels): oneDNN's and MKL's own verbose reports read
back, numpy's BLAS with its core type, the steering variables, and a probe that fails without failing."""
import pytest

from sensitivity.trial import kernels

pytestmark = pytest.mark.portable

TF_LINES = """onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)
onednn_verbose,v1,info,cpu,runtime:threadpool,nthr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions
onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core,forward_training,src_f32::blocked:acdb,,,mb2
"""
MXNET_LINES = """dnnl_verbose,info,oneDNN v2.4.4 (commit 5818c40f07bdb6307f9bc64e929836fe036da644)
dnnl_verbose,info,cpu,isa:Intel AVX2
dnnl_verbose,exec,cpu,convolution,jit:avx2,forward_training,src_f32::blocked:abcd:f0,,,mb2_ic4oc8
"""
MKL_LINE = ("MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture "
            "Intel(R) AVX2 enabled processors, Lnx 2.45GHz lp64 gnu_thread\nMKL_VERBOSE SGEMM(N,N,64,64,64) 540.07us\n")


def test_onednns_and_mkls_reports_are_read_back():
    tf = kernels.parse(TF_LINES)
    assert tf == {"onednn_version": "v3.7.3", "onednn_isa": "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions",
                  "onednn_convolution": "brg_conv_fwd:avx512_core"}
    mx = kernels.parse(MXNET_LINES)
    assert mx["onednn_isa"] == "Intel AVX2" and mx["onednn_convolution"] == "jit:avx2"
    mkl = kernels.parse(MKL_LINE + "aten_cpu_capability:AVX2\n")
    assert "AVX2 enabled processors" in mkl["mkl"] and mkl["aten_cpu_capability"] == "AVX2"
    assert kernels.summary({**mx, "blas": [{"internal_api": "openblas", "architecture": "Zen"}]}) == \
        "oneDNN AVX2; openblas Zen"


def test_numpys_blas_and_the_steering_variables_are_recorded(monkeypatch, tmp_path):
    for name in kernels.STEERING:  # the machine may set some (OPENBLAS_L2_SIZE on some processors)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    record = kernels.describe("chainer")  # numpy's BLAS only: no library of its own to probe
    assert record["variables"] == {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"}
    blas = record["blas"]
    assert blas and blas[0]["internal_api"] in ("openblas", "mkl", "blis") and blas[0]["architecture"]
    assert record["isa"] == kernels.summary(record) != "unknown"


def test_a_failed_probe_is_recorded_and_not_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(kernels.PROBES, "torch", "raise SystemExit(3)")
    found = kernels.probe("torch")
    assert found["probe_error"] == "the probe exited with code 3"
    assert not (tmp_path / "kernels").exists() or not list((tmp_path / "kernels").iterdir())
    assert kernels.summary(found).endswith("probe failed")
