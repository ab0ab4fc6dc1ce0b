"""TensorFlow's no-GPU lines are dropped when our TensorFlow modules are imported; other lines
written to standard error in the meantime pass unchanged, in order."""

import os
import subprocess
import sys

from beam_tensorize.tf._quiet import without_noise

NOISE_LINES = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    b"I0000 00:00:1795700813.471856    9565 cudart_stub.cc:31] Could not find cuda drivers on your "
    b"machine, GPU will not be used.\n"
    b"E0000 00:00:1795700816.526434    9565 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
    b"CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)


def test_only_the_noise_is_dropped_and_the_rest_passes_in_order(capfd):
    with without_noise():
        os.write(2, b"first line\n" + NOISE_LINES[:40])
        os.write(2, NOISE_LINES[40:] + b"W0000 a warning of TensorFlow's own\n")
        os.write(2, b"no newline at the end")
    os.write(2, b"\nafter the block: " + NOISE_LINES.splitlines()[1] + b"\n")
    assert capfd.readouterr().err == (
        "first line\nW0000 a warning of TensorFlow's own\nno newline at the end\n"
        "after the block: " + NOISE_LINES.decode().splitlines()[1] + "\n"
    )


def test_importing_our_tensorflow_package_and_running_an_op_prints_nothing():
    program = (
        "import beam_tensorize.tf\nimport tensorflow as tf\nprint(int(tf.reduce_sum(tf.constant([1, 2]))))\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, env=env, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"3\n", b"")
