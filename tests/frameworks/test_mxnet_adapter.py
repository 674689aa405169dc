"""MXNet only: the contract holds whatever kernels oneDNN picks for this CPU."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("mxnet"), reason="mxnet runs in the legacy environment")
CONTRACT = Path(__file__).with_name("test_adapter_contract.py")


def _with_isa(isa: str, **more) -> dict:
    return {**os.environ, "DNNL_MAX_CPU_ISA": isa, **more}


@pytest.mark.contract
def test_contract_does_not_depend_on_the_cpus_kernels():
    """oneDNN picks its kernels by instruction set, so float32 gradients round differently on an AVX2 CPU
    (AMD's, say) than on this AVX-512 one; DNNL_MAX_CPU_ISA=AVX2 makes this CPU pick those kernels. Every
    Adam step of the contract (canonical, native, hand-written rules) must hold there too: on AVX2, the
    reference once drifted a full Adam step from MXNet on 15% of the weights."""
    probe = subprocess.run(
        [sys.executable, "-c", "import mxnet as mx; n = mx.gluon.nn.Dense(2, in_units=3); n.initialize(); "
                               "n(mx.nd.ones((1, 3))).wait_to_read()"],
        env=_with_isa("AVX2", DNNL_VERBOSE="1"), capture_output=True, text=True, timeout=120)
    isa = [line for line in probe.stdout.splitlines() if ",isa:" in line]
    assert probe.returncode == 0 and isa, probe.stdout[-2000:] + probe.stderr[-2000:]
    assert "AVX-512" not in isa[0], f"DNNL_MAX_CPU_ISA=AVX2 was not honoured: {isa[0]}"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore", str(CONTRACT),
         "-k", "mxnet and adam"], env=_with_isa("AVX2"), capture_output=True, text=True, timeout=600)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    passed = re.search(r"(\d+) passed", summary)
    assert run.returncode == 0 and passed and int(passed.group(1)) >= 12, run.stdout[-4000:] + run.stderr[-2000:]
