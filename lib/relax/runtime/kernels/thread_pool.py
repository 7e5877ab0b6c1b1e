"""The process-wide thread pool that parallel loops of kernels run on.

A kernel's parallel loop calls `__relax_pool_launch(task, closure, count)`
(parallel.py emits the call; the symbol is left undefined in the object). This
module writes that function, and the pool behind it, in LLVM IR, compiles it
once per process with MCJIT on the first load of an object that needs it, and
registers its address with LLVM's symbol table (`llvm.add_symbol`), so MCJIT
binds the kernels' references to it. No C compiler is involved, and the code
runs on threads that never touch Python or the GIL.

The protocol, all in one 64-bit word `slots` = launch id << 32 | CLOSED | joined:

- a launch takes the pool with a try-lock (`busy`); a launch that finds the pool
  taken (another Python thread's kernel, or a nested launch) runs the task on
  its own thread instead of waiting, so nothing can deadlock;
- on the first launch (and after a fork) the pool is set up; worker threads are
  started as launches ask for more of them, up to MAX_THREADS - 1, and are
  never stopped;
- the caller stores the task, its closure and how many workers may join, then
  opens a new launch id, wakes sleeping workers, and runs the task itself as
  participant 0: `task(closure, 0)`;
- a worker that sees a new id joins by incrementing `joined` with a
  compare-and-swap (refused once the launch is closed or full), runs
  `task(closure, index)` and counts itself in `finished`. A worker's index is
  fixed when it is started (1 + the workers started before it), not by the order
  in which it joins, and worker i joins only launches that ask for at least i
  workers, so participant p of a launch is always the same thread and gets the
  same share of every launch (parallel.py's trampoline runs participant p's own
  block of chunks first, which then stays in that core's cache, and takes what
  is left of the others' after: a worker that is late or absent delays nobody);
- when the caller's own task returns, every chunk has been taken; it closes
  the launch (sets CLOSED, which fixes how many joined) and waits, spinning then
  yielding its core, until that many have finished. A worker that was asleep or
  descheduled when the launch ran simply never joins it, so it delays nobody.
- a launch that lost time waiting for a descheduled worker makes the pool run
  the next few launches on the caller alone (BACKOFF_FLOOR_NS, MAX_BACKOFF).

An idle worker polls `slots` (a `pause` between polls on x86, the clock read
and sched_yield() called every CLOCK_ROUNDS polls) until DEFAULT_SPIN_US (RELAX_POOL_SPIN_US, set_spin)
have passed since its last task, then sleeps on a condition variable; the caller
takes the mutex to signal only when a worker it asks for sleeps (a bit per worker in
`sleeping`). A worker not asked for a launch goes to sleep at once and stays asleep
through launches that do not ask for it, so a pool grown by one wide launch neither
spins nor wakes for the narrow ones after it. The span is time, not a
count of pauses, whose length differs tenfold between CPUs; it is counted from
the worker's last task, so a model run whose kernels follow each other closer
than that finds its workers awake, and a process that stops launching has them
asleep that long after. The mutex and condition variable live in 128-byte
slots initialized with pthread_*_init, so no platform's struct layout is assumed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import time

import llvmlite.binding as llvm

from ...diagnostics import UserError
from . import abi
from .host import host_target_machine, initialize_llvm

POOL_LAUNCH = "__relax_pool_launch"
_SET_BACKOFF = "__relax_pool_set_backoff"
_SET_SPIN = "__relax_pool_set_spin"

# Microseconds an idle worker polls for the next launch, counted from its last
# task, before it sleeps on the condition variable (RELAX_POOL_SPIN_US overrides).
# It must outlast the gaps of a model run (between kernels, and between calls of
# a model in a loop) and stay short enough not to hold a core for long once the
# process is idle. The clock is read every CLOCK_ROUNDS pauses, and the worker
# then calls sched_yield(), which returns at once unless another thread is ready
# to run on that core: a spinning worker then gives way instead of taking the core.
# Measured on 2 cores, models run in a loop, 2 threads (mlp_b1; transformer):
# no spin 96 us; 1394 us. 40 us: 43; 1227. 200 us: 43; 1123. 1000 and 5000 us: as
# 200. Yielding cost nothing on the idle machine (200 us without: 43; 1118), and on
# the machine loaded by other processes it kept mlp_b1 at 77 us where spinning
# without it took 144 (no spin: 85).
DEFAULT_SPIN_US = 200
CLOCK_ROUNDS = 32
SPIN_ENV = "RELAX_POOL_SPIN_US"
MAX_SPIN_US = 1_000_000

# Polls of `finished` before the launching thread yields its core to the workers.
WAIT_SPINS = 64

# Oversubscription back-off: a launch whose caller, after its own share, waited
# longer for the workers than that share took (and more than BACKOFF_FLOOR_NS) lost
# to running alone, typically because a worker was descheduled holding a chunk. The
# pool then runs the next 1, 2, 4, ... MAX_BACKOFF launches on the caller alone and
# tries again; a launch that goes well halves the next back-off.
BACKOFF_FLOOR_NS = 20000
MAX_BACKOFF = 1024

_CLOSED = 1 << 31
_JOINED_MASK = _CLOSED - 1


def _pause(triple: str) -> tuple[str, str]:
    """A call telling the CPU it is in a spin loop, and the intrinsic's declaration."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686"):
        return "  call void @llvm.x86.sse2.pause()\n", "declare void @llvm.x86.sse2.pause()"
    if arch in ("aarch64", "arm64"):
        return "  call void @llvm.aarch64.hint(i32 1)\n", "declare void @llvm.aarch64.hint(i32)"
    return "", ""


def pool_ir(triple: str) -> str:
    """The pool's LLVM module, as text."""
    pause, pause_declaration = _pause(triple)
    workers = abi.MAX_THREADS - 1
    return f"""
@slots = internal global i64 0, align 64
@finished = internal global i32 0, align 64
@task = internal global ptr null, align 64
@closure = internal global ptr null, align 8
@wanted = internal global i32 0, align 8
@busy = internal global i32 0, align 64
@started = internal global i32 0, align 8
@sleeping = internal global i64 0, align 64
@owner_pid = internal global i32 0, align 8
@backoff = internal global i32 0, align 8
@skip = internal global i32 0, align 8
@max_backoff = internal global i32 {MAX_BACKOFF}, align 8
@spin_ns = internal global i64 {DEFAULT_SPIN_US * 1000}, align 8
@spin_yield = internal global i32 1, align 8
@mutex = internal global [128 x i8] zeroinitializer, align 64
@cond = internal global [128 x i8] zeroinitializer, align 64

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @sched_yield()
declare i32 @getpid()
declare i32 @clock_gettime(i32, ptr)
{pause_declaration}

; A worker: wait for a launch id other than the last one seen, try to join it, run it.
; Its argument packs its participant index (fixed at creation, 1 + the workers
; started before it) above the launch id it was created at.
define internal ptr @worker(ptr %first_seen) {{
entry:
  %packed = ptrtoint ptr %first_seen to i64
  %seen0 = and i64 %packed, 4294967295
  %index64 = lshr i64 %packed, 32
  %index = trunc i64 %index64 to i32
  %bit = shl i64 1, %index64
  %not.bit = xor i64 %bit, -1
  br label %idle
idle:
  %seen = phi i64 [%seen0, %entry], [%id, %skip], [%id, %ran]
  %since = call i64 @now()
  %spin.ns = load atomic i64, ptr @spin_ns monotonic, align 8
  br label %spin
spin:
  %round = phi i64 [0, %idle], [%round.next, %spin.again], [0, %spin.time]
  %w.spin = load atomic i64, ptr @slots seq_cst, align 8
  %id.spin = lshr i64 %w.spin, 32
  %new.spin = icmp ne i64 %id.spin, %seen
  br i1 %new.spin, label %look, label %spin.again
spin.again:
{pause}  %round.next = add i64 %round, 1
  %more = icmp ult i64 %round.next, {CLOCK_ROUNDS}
  br i1 %more, label %spin, label %spin.clock
spin.clock:
  %polite = load atomic i32, ptr @spin_yield monotonic, align 4
  %yielding = icmp ne i32 %polite, 0
  br i1 %yielding, label %spin.yield, label %spin.time
spin.yield:
  call i32 @sched_yield()
  br label %spin.time
spin.time:
  %now.spin = call i64 @now()
  %spun = sub i64 %now.spin, %since
  %awake = icmp slt i64 %spun, %spin.ns
  br i1 %awake, label %spin, label %sleep
sleep:
  %seen.asleep = phi i64 [%seen, %spin.time], [%id, %dismiss]
  call i32 @pthread_mutex_lock(ptr @mutex)
  atomicrmw or ptr @sleeping, i64 %bit seq_cst
  br label %sleep.check
sleep.check:
  %seen.now = phi i64 [%seen.asleep, %sleep], [%seen.now, %sleep.wait], [%id.sleep, %sleep.pass]
  %w.sleep = load atomic i64, ptr @slots seq_cst, align 8
  %id.sleep = lshr i64 %w.sleep, 32
  %new.sleep = icmp ne i64 %id.sleep, %seen.now
  br i1 %new.sleep, label %sleep.asked, label %sleep.wait
sleep.asked:
  %wanted.sleep = load atomic i32, ptr @wanted seq_cst, align 4
  %wanted.sleep64 = sext i32 %wanted.sleep to i64
  %passed = icmp sgt i64 %index64, %wanted.sleep64
  br i1 %passed, label %sleep.pass, label %woken
sleep.pass:
  br label %sleep.check
sleep.wait:
  call i32 @pthread_cond_wait(ptr @cond, ptr @mutex)
  br label %sleep.check
woken:
  atomicrmw and ptr @sleeping, i64 %not.bit seq_cst
  call i32 @pthread_mutex_unlock(ptr @mutex)
  br label %look
look:
  %w = load atomic i64, ptr @slots seq_cst, align 8
  %id = lshr i64 %w, 32
  %closed.bit = and i64 %w, {_CLOSED}
  %closed = icmp ne i64 %closed.bit, 0
  br i1 %closed, label %skip, label %room
room:
  %joined = and i64 %w, {_JOINED_MASK}
  %wanted = load atomic i32, ptr @wanted seq_cst, align 4
  %wanted64 = sext i32 %wanted to i64
  %not.asked = icmp sgt i64 %index64, %wanted64
  br i1 %not.asked, label %dismiss, label %room.free
dismiss:
  br label %sleep
room.free:
  %full = icmp sge i64 %joined, %wanted64
  br i1 %full, label %skip, label %join
join:
  %w.joined = add i64 %w, 1
  %swap = cmpxchg ptr @slots, i64 %w, i64 %w.joined seq_cst seq_cst
  %in = extractvalue {{ i64, i1 }} %swap, 1
  br i1 %in, label %run, label %look
run:
  %task = load atomic ptr, ptr @task seq_cst, align 8
  %closure = load atomic ptr, ptr @closure seq_cst, align 8
  call ptr %task(ptr %closure, i32 %index)
  atomicrmw add ptr @finished, i32 1 seq_cst
  br label %ran
ran:
  br label %idle
skip:
  br label %idle
}}

; Monotonic nanoseconds.
define internal i64 @now() {{
entry:
  %ts = alloca {{ i64, i64 }}, align 8
  call i32 @clock_gettime(i32 {time.CLOCK_MONOTONIC}, ptr %ts)
  %sec.p = getelementptr inbounds {{ i64, i64 }}, ptr %ts, i32 0, i32 0
  %nsec.p = getelementptr inbounds {{ i64, i64 }}, ptr %ts, i32 0, i32 1
  %sec = load i64, ptr %sec.p, align 8
  %nsec = load i64, ptr %nsec.p, align 8
  %ns = mul i64 %sec, 1000000000
  %total = add i64 %ns, %nsec
  ret i64 %total
}}

; Sets the pool up on the first launch of this process (or of a forked child).
define internal void @ensure_setup() {{
entry:
  %pid = call i32 @getpid()
  %owner = load i32, ptr @owner_pid, align 4
  %same = icmp eq i32 %pid, %owner
  br i1 %same, label %done, label %setup
setup:
  store atomic i32 0, ptr @started seq_cst, align 4
  store atomic i64 0, ptr @sleeping seq_cst, align 8
  store i32 0, ptr @backoff, align 4
  store i32 0, ptr @skip, align 4
  call i32 @pthread_mutex_init(ptr @mutex, ptr null)
  call i32 @pthread_cond_init(ptr @cond, ptr null)
  store i32 %pid, ptr @owner_pid, align 4
  br label %done
done:
  ret void
}}

; Starts workers until `need` run (or one cannot be started); returns how many run.
define internal i32 @grow(i32 %need) {{
entry:
  %tid = alloca i64, align 8
  br label %check
check:
  %have = load atomic i32, ptr @started seq_cst, align 4
  %enough = icmp sge i32 %have, %need
  br i1 %enough, label %done, label %start
start:
  %w = load atomic i64, ptr @slots seq_cst, align 8
  %id = lshr i64 %w, 32
  %have.next = add i32 %have, 1
  %index = zext i32 %have.next to i64
  %index.high = shl i64 %index, 32
  %packed = or i64 %index.high, %id
  %arg = inttoptr i64 %packed to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %started.one, label %done
started.one:
  %thread = load i64, ptr %tid, align 8
  call i32 @pthread_detach(i64 %thread)
  store atomic i32 %have.next, ptr @started seq_cst, align 4
  br label %check
done:
  %result = load atomic i32, ptr @started seq_cst, align 4
  ret i32 %result
}}

define void @{POOL_LAUNCH}(ptr %task, ptr %closure, i32 %count) {{
entry:
  %take = cmpxchg ptr @busy, i32 0, i32 1 seq_cst seq_cst
  %mine = extractvalue {{ i32, i1 }} %take, 1
  br i1 %mine, label %setup, label %alone
alone:
  call ptr %task(ptr %closure, i32 0)
  ret void
setup:
  call void @ensure_setup()
  %skipping = load i32, ptr @skip, align 4
  %backing.off = icmp sgt i32 %skipping, 0
  br i1 %backing.off, label %skip.one, label %size
skip.one:
  %skip.left = sub i32 %skipping, 1
  store i32 %skip.left, ptr @skip, align 4
  br label %serial
size:
  %helpers = sub i32 %count, 1
  %capped.cmp = icmp slt i32 %helpers, {workers}
  %need = select i1 %capped.cmp, i32 %helpers, i32 {workers}
  %have = call i32 @grow(i32 %need)
  %fewer = icmp slt i32 %have, %need
  %wanted = select i1 %fewer, i32 %have, i32 %need
  %none = icmp sle i32 %wanted, 0
  br i1 %none, label %serial, label %open
serial:
  call ptr %task(ptr %closure, i32 0)
  store atomic i32 0, ptr @busy seq_cst, align 4
  ret void
open:
  store atomic ptr %task, ptr @task seq_cst, align 8
  store atomic ptr %closure, ptr @closure seq_cst, align 8
  store atomic i32 %wanted, ptr @wanted seq_cst, align 4
  store atomic i32 0, ptr @finished seq_cst, align 4
  %old = load atomic i64, ptr @slots seq_cst, align 8
  %old.id = lshr i64 %old, 32
  %new.id = add i64 %old.id, 1
  %new.id.low = and i64 %new.id, 4294967295
  %opened = shl i64 %new.id.low, 32
  store atomic i64 %opened, ptr @slots seq_cst, align 8
  %sleeping = load atomic i64, ptr @sleeping seq_cst, align 8
  %wanted.wide = zext i32 %wanted to i64
  %past.asked = shl i64 2, %wanted.wide
  %asked = sub i64 %past.asked, 2
  %asked.asleep = and i64 %sleeping, %asked
  %wake = icmp ne i64 %asked.asleep, 0
  br i1 %wake, label %signal, label %work
signal:
  call i32 @pthread_mutex_lock(ptr @mutex)
  call i32 @pthread_cond_broadcast(ptr @cond)
  call i32 @pthread_mutex_unlock(ptr @mutex)
  br label %work
work:
  %t0 = call i64 @now()
  call ptr %task(ptr %closure, i32 0)
  %t1 = call i64 @now()
  %at.close = atomicrmw or ptr @slots, i64 {_CLOSED} seq_cst
  %joined64 = and i64 %at.close, {_JOINED_MASK}
  %joined = trunc i64 %joined64 to i32
  br label %wait
wait:
  %spins = phi i32 [0, %work], [%spins.next, %wait.pause], [%spins.next, %wait.yield]
  %done.count = load atomic i32, ptr @finished seq_cst, align 4
  %all = icmp eq i32 %done.count, %joined
  br i1 %all, label %release, label %wait.again
wait.again:
  %spins.next = add i32 %spins, 1
  %patient = icmp ult i32 %spins, {WAIT_SPINS}
  br i1 %patient, label %wait.pause, label %wait.yield
wait.pause:
{pause}  br label %wait
wait.yield:
  call i32 @sched_yield()
  br label %wait
release:
  %t2 = call i64 @now()
  %own = sub i64 %t1, %t0
  %waited = sub i64 %t2, %t1
  %longer = icmp sgt i64 %waited, %own
  %noticeable = icmp sgt i64 %waited, {BACKOFF_FLOOR_NS}
  %lost = and i1 %longer, %noticeable
  %last = load i32, ptr @backoff, align 4
  br i1 %lost, label %lost.launch, label %good.launch
lost.launch:
  %doubled = shl i32 %last, 1
  %first = icmp eq i32 %last, 0
  %grown = select i1 %first, i32 1, i32 %doubled
  %limit = load i32, ptr @max_backoff, align 4
  %too.long = icmp sgt i32 %grown, %limit
  %next = select i1 %too.long, i32 %limit, i32 %grown
  store i32 %next, ptr @backoff, align 4
  store i32 %next, ptr @skip, align 4
  br label %unlock
good.launch:
  %halved = lshr i32 %last, 1
  store i32 %halved, ptr @backoff, align 4
  br label %unlock
unlock:
  store atomic i32 0, ptr @busy seq_cst, align 4
  ret void
}}

; Sets how long idle workers spin (nanoseconds) and whether they yield their core
; while they do (workers already spinning keep their current span until their next task).
define void @{_SET_SPIN}(i64 %ns, i32 %polite) {{
entry:
  store atomic i64 %ns, ptr @spin_ns monotonic, align 8
  store atomic i32 %polite, ptr @spin_yield monotonic, align 4
  ret void
}}

; Sets the longest back-off (0: never back off) and forgets the current one.
define void @{_SET_BACKOFF}(i32 %limit) {{
entry:
  br label %take
take:
  %swap = cmpxchg ptr @busy, i32 0, i32 1 seq_cst seq_cst
  %mine = extractvalue {{ i32, i1 }} %swap, 1
  br i1 %mine, label %set, label %later
later:
  call i32 @sched_yield()
  br label %take
set:
  store i32 %limit, ptr @max_backoff, align 4
  store i32 0, ptr @backoff, align 4
  store i32 0, ptr @skip, align 4
  store atomic i32 0, ptr @busy seq_cst, align 4
  ret void
}}
"""


@functools.cache
def ensure_pool() -> int:
    """Compiles the pool (once per process) and makes POOL_LAUNCH resolvable; returns its address."""
    initialize_llvm()
    machine = host_target_machine()
    module = llvm.parse_assembly(pool_ir(machine.triple))
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    address = engine.get_function_address(POOL_LAUNCH)
    if not address:
        raise RuntimeError("the kernel thread pool did not compile")
    llvm.add_symbol(POOL_LAUNCH, address)
    global _set_backoff, _set_spin
    _set_backoff = ctypes.CFUNCTYPE(None, ctypes.c_int32)(engine.get_function_address(_SET_BACKOFF))
    _set_spin = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32)(engine.get_function_address(_SET_SPIN))
    _set_spin(spin_from_environment() * 1000, 1)
    # Worker threads run this code until the process ends: it must never be freed,
    # not even when Python tears its objects down at exit.
    engine.detach()
    return address


_set_backoff = None
_set_spin = None


def spin_from_environment() -> int:
    """Microseconds idle workers spin: RELAX_POOL_SPIN_US, else DEFAULT_SPIN_US."""
    value = os.environ.get(SPIN_ENV, "").strip()
    if not value:
        return DEFAULT_SPIN_US
    try:
        microseconds = int(value)
    except ValueError:
        microseconds = -1
    if not 0 <= microseconds <= MAX_SPIN_US:
        raise UserError(f"{SPIN_ENV} must be a whole number of microseconds from 0 to {MAX_SPIN_US}, not '{value}'")
    return microseconds


def set_spin(microseconds: int, polite: bool = True) -> None:
    """How long idle pool workers poll for the next launch before they sleep.

    `polite`: they call sched_yield() between clock reads, so a spinning worker gives
    its core to any other runnable thread. Workers already spinning keep their span
    until they next run a task.
    """
    ensure_pool()
    _set_spin(max(0, min(int(microseconds), MAX_SPIN_US)) * 1000, int(bool(polite)))


def set_max_backoff(launches: int = MAX_BACKOFF) -> None:
    """How many launches the pool may run alone after one that lost time waiting (0: never).

    Tests that check which threads ran a loop turn the back-off off, so that a
    loaded machine cannot make them see one thread.
    """
    ensure_pool()
    _set_backoff(max(0, min(int(launches), 1 << 30)))
