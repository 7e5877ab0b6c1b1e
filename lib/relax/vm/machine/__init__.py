"""Running bytecode: the VirtualMachine, its vm.builtin.* functions and its execution
tiers.

- `virtual_machine.py`: loads an Executable on devices; the interpreted dispatch loop
  over instructions decoded once (`decoder.py`); its Python API (`function_api.py`);
- `entry_checks.py`, `static_memory.py`: what a function's constant checks and
  static-shape allocations reduce to, decided once per VM; `static_calls.py`: the
  interpreter's static allocation and the call after it as one instruction;
- `compiled_mode.py`: exec_mode="compiled", each function as one Python function;
- `native_mode.py`: its native tier, a static-shape function as one machine-code call,
  planned once (`native_plan.py`);
- `cuda_device.py`: what changes when the device is a GPU; `profiling.py`: timing.
"""
