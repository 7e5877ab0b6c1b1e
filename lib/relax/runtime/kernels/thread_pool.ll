; The process-wide thread pool of parallel kernels, in LLVM IR: see thread_pool.py,
; whose docstring describes the protocol. thread_pool.pool_ir fills in the placeholders
; (string.Template) with that module's constants and the target's spin-loop hint.

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
@max_backoff = internal global i32 ${max_backoff}, align 8
@spin_ns = internal global i64 ${spin_ns}, align 8
@spin_yield = internal global i32 ${yield_checks}, align 8
@caller_cpu = internal global i32 -1, align 8
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
declare i32 @sched_getcpu()
declare i32 @sched_getaffinity(i32, i64, ptr)
declare i32 @sched_setaffinity(i32, i64, ptr)
${pause_declaration}

; A worker: wait for a launch id other than the last one seen, try to join it, run it.
; Its argument packs its participant index (fixed at creation, 1 + the workers
; started before it) above the launch id it was created at.
define internal ptr @worker(ptr %first_seen) {
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
  %checks = phi i64 [0, %idle], [%checks, %spin.again], [%checks.next, %spin.time]
  %w.spin = load atomic i64, ptr @slots seq_cst, align 8
  %id.spin = lshr i64 %w.spin, 32
  %new.spin = icmp ne i64 %id.spin, %seen
  br i1 %new.spin, label %look, label %spin.again
spin.again:
${pause}  %round.next = add i64 %round, 1
  %more = icmp ult i64 %round.next, ${clock_rounds}
  br i1 %more, label %spin, label %spin.clock
spin.clock:
  %checks.next = add i64 %checks, 1
  %every = load atomic i32, ptr @spin_yield monotonic, align 4
  %polite = icmp ne i32 %every, 0
  %every.some = select i1 %polite, i32 %every, i32 1
  %every64 = zext i32 %every.some to i64
  %checks.left = urem i64 %checks.next, %every64
  %due = icmp eq i64 %checks.left, 0
  %yielding = and i1 %polite, %due
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
  %closed.bit = and i64 %w, ${closed}
  %closed = icmp ne i64 %closed.bit, 0
  br i1 %closed, label %skip, label %room
room:
  %joined = and i64 %w, ${joined_mask}
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
  %in = extractvalue { i64, i1 } %swap, 1
  br i1 %in, label %run, label %look
run:
  call void @leave_caller_cpu()
  %task = load atomic ptr, ptr @task seq_cst, align 8
  %closure = load atomic ptr, ptr @closure seq_cst, align 8
  call ptr %task(ptr %closure, i32 %index)
  atomicrmw add ptr @finished, i32 1 seq_cst
  br label %ran
ran:
  br label %idle
skip:
  br label %idle
}

; A worker that joins a launch on the CPU its caller opened it on shares that CPU with
; the caller (the scheduler placed them together, and may take milliseconds to part
; them, cache-hot as both stay): it moves itself to another CPU it may run on, by
; leaving the current one out of its affinity mask for a moment (the kernel migrates
; it at once), and allows every CPU it had again.
define internal void @leave_caller_cpu() {
entry:
  %mine = call i32 @sched_getcpu()
  %caller = load atomic i32, ptr @caller_cpu monotonic, align 4
  %same = icmp eq i32 %mine, %caller
  %known = icmp sge i32 %mine, 0
  %fits = icmp slt i32 %mine, ${affinity_bits}
  %known.fits = and i1 %known, %fits
  %stacked = and i1 %same, %known.fits
  br i1 %stacked, label %read, label %done
read:
  %allowed = alloca [${affinity_words} x i64], align 8
  %others = alloca [${affinity_words} x i64], align 8
  %rc = call i32 @sched_getaffinity(i32 0, i64 ${affinity_bytes}, ptr %allowed)
  %read.ok = icmp eq i32 %rc, 0
  br i1 %read.ok, label %copy, label %done
copy:
  call void @llvm.memcpy.p0.p0.i64(ptr %others, ptr %allowed, i64 ${affinity_bytes}, i1 false)
  %word.index = lshr i32 %mine, 6
  %word.p = getelementptr inbounds [${affinity_words} x i64], ptr %others, i32 0, i32 %word.index
  %word = load i64, ptr %word.p, align 8
  %bit.index = and i32 %mine, 63
  %bit.index64 = zext i32 %bit.index to i64
  %bit = shl i64 1, %bit.index64
  %not.bit = xor i64 %bit, -1
  %cleared = and i64 %word, %not.bit
  store i64 %cleared, ptr %word.p, align 8
  br label %any
any:
  %i = phi i32 [0, %copy], [%i.next, %any.next]
  %w.p = getelementptr inbounds [${affinity_words} x i64], ptr %others, i32 0, i32 %i
  %w = load i64, ptr %w.p, align 8
  %some = icmp ne i64 %w, 0
  br i1 %some, label %move, label %any.next
any.next:
  %i.next = add i32 %i, 1
  %more = icmp ult i32 %i.next, ${affinity_words}
  br i1 %more, label %any, label %done
move:
  call i32 @sched_setaffinity(i32 0, i64 ${affinity_bytes}, ptr %others)
  call i32 @sched_setaffinity(i32 0, i64 ${affinity_bytes}, ptr %allowed)
  br label %done
done:
  ret void
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; Monotonic nanoseconds.
define internal i64 @now() {
entry:
  %ts = alloca { i64, i64 }, align 8
  call i32 @clock_gettime(i32 ${clock_monotonic}, ptr %ts)
  %sec.p = getelementptr inbounds { i64, i64 }, ptr %ts, i32 0, i32 0
  %nsec.p = getelementptr inbounds { i64, i64 }, ptr %ts, i32 0, i32 1
  %sec = load i64, ptr %sec.p, align 8
  %nsec = load i64, ptr %nsec.p, align 8
  %ns = mul i64 %sec, 1000000000
  %total = add i64 %ns, %nsec
  ret i64 %total
}

; Sets the pool up on the first launch of this process (or of a forked child).
define internal void @ensure_setup() {
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
}

; Starts workers until `need` run (or one cannot be started); returns how many run.
define internal i32 @grow(i32 %need) {
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
}

define void @${pool_launch}(ptr %task, ptr %closure, i32 %count) {
entry:
  %take = cmpxchg ptr @busy, i32 0, i32 1 seq_cst seq_cst
  %mine = extractvalue { i32, i1 } %take, 1
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
  %capped.cmp = icmp slt i32 %helpers, ${workers}
  %need = select i1 %capped.cmp, i32 %helpers, i32 ${workers}
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
  %caller.cpu = call i32 @sched_getcpu()
  store atomic i32 %caller.cpu, ptr @caller_cpu monotonic, align 4
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
  %at.close = atomicrmw or ptr @slots, i64 ${closed} seq_cst
  %joined64 = and i64 %at.close, ${joined_mask}
  %joined = trunc i64 %joined64 to i32
  br label %wait
wait:
  %spins = phi i32 [0, %work], [%spins.next, %wait.pause], [%spins.next, %wait.yield]
  %done.count = load atomic i32, ptr @finished seq_cst, align 4
  %all = icmp eq i32 %done.count, %joined
  br i1 %all, label %release, label %wait.again
wait.again:
  %spins.next = add i32 %spins, 1
  %patient = icmp ult i32 %spins, ${wait_spins}
  br i1 %patient, label %wait.pause, label %wait.yield
wait.pause:
${pause}  br label %wait
wait.yield:
  call i32 @sched_yield()
  br label %wait
release:
  %t2 = call i64 @now()
  %own = sub i64 %t1, %t0
  %waited = sub i64 %t2, %t1
  %longer = icmp sgt i64 %waited, %own
  %noticeable = icmp sgt i64 %waited, ${backoff_floor_ns}
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
}

; Sets how long idle workers spin (nanoseconds) and at which clock reads they yield their
; core while they do: every `yield_every`-th, never for 0 (workers already spinning keep
; their current span until their next task).
define void @${set_spin}(i64 %ns, i32 %yield_every) {
entry:
  store atomic i64 %ns, ptr @spin_ns monotonic, align 8
  store atomic i32 %yield_every, ptr @spin_yield monotonic, align 4
  ret void
}

; Sets the longest back-off (0: never back off) and forgets the current one.
define void @${set_backoff}(i32 %limit) {
entry:
  br label %take
take:
  %swap = cmpxchg ptr @busy, i32 0, i32 1 seq_cst seq_cst
  %mine = extractvalue { i32, i1 } %swap, 1
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
}
