"""relaxrun: runs a compiled artifact (.vmx, or a .vmo with no kernels) in the Relax VM."""

from __future__ import annotations

import click

from relax.driver import options
from relax.driver.runner import run_command

EPILOG = """\b
Inputs (--input and --expected-output, repeatable, in parameter order or by name):
  x.npy | @x.npy          one array from a .npy file ('-': standard input)
  @inputs.npz             every array of an .npz, bound by parameter name
  name=@x.npy             bound by parameter name (tuple leaves: t.0, t.1)
  2x3xf32=1,2,3,4,5,6     inline values; 2x3xf32=1 splats; 2x3xf32 is zeros
  f32=3.5                 a scalar (float32, int64, bool, f32, i64, i1 ...)
\b
Examples:
  relaxrun model.vmx --input x.npy --output y.npy
  relaxrun model.vmx --input @inputs.npz --expected-output @expected.npz --atol 1e-4
  relaxrun model.vmx --input 1x784xf32=0.5 --repeat 100 --warmup 10 --print-time
  relaxrun model.vmx --input @inputs.npz --profile --json
  relaxrun model.vmx --list-functions
  relaxrun packed.vmx --plugin my_funcs.py --input 2x3xf32=1
  relaxrun py_func.vmx --allow-python --input x.npy          run the Python functions it embeds
  relaxrun model.vmx --trust keys/ --input x.npy           only if signed by a key in keys/
  relaxrun --serve 0.0.0.0:9090 --key-file secret          serve remote runs on this machine
  relaxrun --remote board:9090 --key-file secret model.vmx --input x.npy --repeat 10 --print-time
  relaxrun --tracker-serve 0.0.0.0:9190 --key-file secret     lend servers to clients
  relaxrun --serve 0.0.0.0:9090 --key-file secret --tracker lab:9190 --device-key rpi4
  relaxrun --remote tracker://lab:9190/rpi4 --key-file secret model.vmx --input x.npy
  relaxrun --workers 2 tp_mlp.vmx --input @inputs.npz       on 2 local workers (relax.disco)
  mpiexec -n 2 relaxrun --mpi tp_mlp.vmx --input @inputs.npz   one worker per MPI rank
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("artifact", metavar="FILE", required=False)
@options.func_option
@click.option("--input", "inputs", metavar="VALUE", multiple=True, help="An input (see below); repeatable.")
@click.option("--output", "outputs", metavar="FILE", multiple=True,
              help="Write result i to the i-th FILE (.npy); one .npz or '-' (text) takes all.")
@click.option("--output-dir", metavar="DIR", default=None, help="Write results as DIR/00.npy, DIR/01.npy, ...")
@click.option("--expected-output", "expected", metavar="VALUE", multiple=True,
              help="Compare results with these (same syntax as --input); exit 3 on mismatch.")
@click.option("--atol", type=float, default=1e-5, show_default=True, help="Absolute tolerance of the comparison.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, help="Relative tolerance of the comparison.")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda[:N]", help="Device to run on.")
@click.option("--memory", type=click.Choice(["pooled", "naive"]), default="pooled", show_default=True,
              help="Allocator: pooled reuses freed buffers; naive allocates each time.")
@click.option("--exec-mode", type=click.Choice(["interp", "compiled"]), default=None,
              help="interp: the bytecode dispatch loop; compiled: a static function as one native call, others as "
                   "generated Python. Default: what the artifact asks for (relaxc/relaxld --exec-mode), else compiled (interp for a program that recurses).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Timed runs.")
@click.option("--warmup", type=click.IntRange(min=0), default=0, show_default=True, help="Untimed runs first.")
@click.option("--print-time", is_flag=True, help="Print min/median/max time of the timed runs, on stderr.")
@click.option("--profile", is_flag=True, help="Print time per called function (one extra run), on stderr.")
@click.option("--trace", is_flag=True, help="Print every executed instruction, on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print results (and time, check, profile) as JSON.")
@click.option("--list-functions", is_flag=True, help="List the functions with their signatures, then exit.")
@click.option("--print-max-elements", type=click.IntRange(min=0), default=1024, show_default=True,
              help="Elide printed results with more elements than this.")
@click.option("--plugin", "plugins", metavar="FILE.py", multiple=True,
              help="Run this Python file first; what it registers with relax.runtime.register_func (e.g. "
                   "@register_func on a def: its own name) binds packed calls and R.call_py_func by name; repeatable. With --serve: registered "
                   "in the server, for every session.")
@click.option("--allow-python", is_flag=True,
              help="Let R.call_py_func run the Python source embedded in the artifact (numpy as np) for any "
                   "function no --plugin registers. Without it, that source never runs.")
@click.option("--trust", "trust", metavar="PUBKEY", multiple=True,
              help="Run only artifacts signed by this Ed25519 public key (PEM), or by a key in this directory "
                   "(*.pub, *.pem); repeatable.")
@click.option("--remote", metavar="HOST:PORT", default=None,
              help="Run on the relax.rpc server there (relaxrun --serve): upload, run, time there, report here; "
                   "tracker://HOST:PORT/DEVICE-KEY: on a free server the tracker lends.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Run on N local workers (relax.disco): every input is broadcast, the program's R.ccl.* "
                   "collectives run between them; worker 0's results are printed.")
@click.option("--ccl", type=click.Choice(["mpi", "threads", "nccl"]), default=None,
              help="The workers' communicator: mpi (processes under mpiexec, the default), threads (one "
                   "process), nccl (one GPU per worker).")
@click.option("--mpi", is_flag=True,
              help="Run as the ranks of this mpiexec job, one worker each; rank 0 prints "
                   "(mpiexec -n N relaxrun --mpi FILE ...).")
@click.option("--serve", metavar="[HOST:]PORT", default=None,
              help="Serve remote runs on this address (host default 127.0.0.1) until SIGINT/SIGTERM; no FILE.")
@click.option("--key-file", metavar="FILE", default=None,
              help="Shared secret of --serve/--remote/--tracker-serve (HMAC challenge); required to serve a "
                   "non-loopback address.")
@click.option("--tls-cert", metavar="PEM", default=None,
              help="TLS: with --serve, the server's certificate (with --tls-key); with --remote, the one to trust.")
@click.option("--tls-key", metavar="PEM", default=None, help="TLS: the server's private key (--serve).")
@click.option("--workdir", metavar="DIR", default=None, help="--serve: where session folders go (default: temp).")
@click.option("--max-upload-bytes", type=click.IntRange(min=1), default=None,
              help="--serve: the largest artifact or message accepted (default 256 MiB).")
@click.option("--idle-timeout", type=click.FloatRange(min=0.1), default=None,
              help="--serve: seconds a client may stay silent before its session ends (default 300).")
@click.option("--tracker", metavar="HOST:PORT", default=None,
              help="--serve: register with this tracker (with --device-key); --key-file is the tracker's key too.")
@click.option("--device-key", metavar="NAME", default=None, help="--serve: the device key to register under.")
@click.option("--tracker-serve", metavar="[HOST:]PORT", default=None,
              help="Run a tracker: lend each client one free server of a device key; no FILE.")
@click.option("--tracker-status", metavar="HOST:PORT", default=None,
              help="Print the servers of the tracker there, free or in use, and the clients waiting; no FILE.")
@options.common_options("relaxrun")
def command(artifact, func, inputs, outputs, output_dir, expected, atol, rtol, device, memory, exec_mode, repeat, warmup,
            print_time, profile, trace, as_json, list_functions, print_max_elements, plugins, allow_python, trust, remote,
            workers, ccl, mpi, serve, key_file, tls_cert, tls_key, workdir, max_upload_bytes, idle_timeout, tracker, device_key, tracker_serve,
            tracker_status, traceback, error_limit, color,
            verbose):
    """Run a function of a compiled artifact on inputs, here or on a relax.rpc server."""
    from relax.driver.run import RunOptions, run_main

    if workers is not None or mpi or ccl is not None:
        from relax.driver.run_workers import refuse_with_serving

        refuse_with_serving(serve=serve, tracker_serve=tracker_serve, tracker_status=tracker_status)
    if serve is not None:
        from relax.rpc.serve_main import serve_main

        return serve_main(serve, key_file, tls_cert, tls_key, workdir, max_upload_bytes, idle_timeout, tracker,
                          device_key, tuple(plugins))
    if tracker_serve is not None or tracker_status is not None:
        from relax.rpc.tracker_main import tracker_serve_main, tracker_status_main

        if tracker_serve is not None:
            return tracker_serve_main(tracker_serve, key_file)
        return tracker_status_main(tracker_status, key_file)
    if artifact is None:
        raise click.UsageError("missing argument 'FILE'")

    return run_main(RunOptions(
        artifact=artifact, func=func, inputs=tuple(inputs), outputs=tuple(outputs), output_dir=output_dir,
        expected=tuple(expected), atol=atol, rtol=rtol, device=device, memory=memory, exec_mode=exec_mode, repeat=repeat,
        warmup=warmup, print_time=print_time, profile=profile, trace=trace, json=as_json,
        list_functions=list_functions, print_max_elements=print_max_elements, plugins=tuple(plugins),
        allow_python=allow_python, trust=tuple(trust), remote=remote, key_file=key_file, tls_cert=tls_cert,
        workers=workers, ccl=ccl, mpi=mpi, verbose=verbose,
    ))


def main(argv=None) -> int:
    return run_command(command, "relaxrun", argv, serving_options=("--serve", "--tracker-serve"))
