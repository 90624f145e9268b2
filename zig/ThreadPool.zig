//! A small persistent pool of worker threads for `parallel_for`. Workers are started lazily, up to the
//! largest thread count asked for. Between jobs a worker first spins for `spin_ns` (so that a job that
//! follows soon, as the calls of a training step do, starts without a futex wake-up, which costs tens of
//! microseconds on a virtual machine), then sleeps on a futex; the caller wakes sleepers only when there are
//! any, and spins the same way before it sleeps waiting for its helpers. The caller takes part in its own job.
//! One job runs at a time; a caller that finds the pool busy (another JS worker, say) runs its tasks itself,
//! which changes nothing in the results: each task writes its own outputs in a fixed order.
const std = @import("std");
const table = @import("kernels/table.zig");

const ThreadPool = @This();
const Io = std.Io;

pub const max_threads = 256;

busy: Io.Mutex = .init,
/// Publishes a job: a job counter in the high 24 bits and, in the low 8, how many workers take part
/// (those with a lower index). One word, so a worker never pairs one job's count with another's epoch.
state: std.atomic.Value(u32) = .init(0),
workers_started: u32 = 0,
task: table.TaskFn = undefined,
context: *anyopaque = undefined,
tasks: u32 = 0,
next: std.atomic.Value(u32) = .init(0),
/// Workers that have not yet finished the current job.
pending: std.atomic.Value(u32) = .init(0),
/// Jobs run with helper threads since load (what tests read to know the threaded path ran).
jobs: std.atomic.Value(u32) = .init(0),
/// Workers asleep on `state`, or about to be: a new job wakes them only when this is nonzero.
sleepers: std.atomic.Value(u32) = .init(0),
/// Whether the caller sleeps on `pending` (or is about to): the last helper wakes it only then.
caller_asleep: std.atomic.Value(u32) = .init(0),

/// How long a thread spins on a word before it sleeps on it.
const spin_ns = 100 * std.time.ns_per_us;

fn io() Io {
    return Io.Threaded.global_single_threaded.io();
}

pub var global: ThreadPool = .{};

pub fn parallelForGlobal(context: *anyopaque, tasks: u32, threads: u32, task: table.TaskFn) callconv(.c) void {
    global.parallelFor(context, tasks, threads, task);
}

pub const runtime: table.Runtime = .{ .parallel_for = parallelForGlobal };

pub fn parallelFor(pool: *ThreadPool, context: *anyopaque, tasks: u32, threads: u32, task: table.TaskFn) void {
    var helpers: u32 = @min(@min(threads, max_threads), tasks) -| 1;
    if (helpers == 0 or !pool.busy.tryLock()) {
        for (0..tasks) |i| task(context, @intCast(i));
        return;
    }
    defer pool.busy.unlock(io());
    helpers = pool.ensureWorkers(helpers);
    pool.task = task;
    pool.context = context;
    pool.tasks = tasks;
    pool.next.store(0, .monotonic);
    const job = (pool.state.load(.monotonic) >> 8) +% 1;
    pool.pending.store(helpers, .monotonic);
    _ = pool.jobs.fetchAdd(1, .monotonic);
    // Sequentially consistent, as the sleepers' count below and in workerMain: either the caller sees a
    // worker's count or the worker sees the new state (and its futex wait returns at once).
    pool.state.store((job << 8) | helpers, .seq_cst);
    if (pool.sleepers.load(.seq_cst) > 0) io().futexWake(u32, &pool.state.raw, std.math.maxInt(u32));
    pool.drain();
    var left = pool.pending.load(.acquire);
    if (left != 0) left = spinWhile(&pool.pending, left);
    while (left != 0) {
        pool.caller_asleep.store(1, .seq_cst);
        left = pool.pending.load(.seq_cst);
        if (left != 0) io().futexWaitUncancelable(u32, &pool.pending.raw, left);
        pool.caller_asleep.store(0, .monotonic);
        left = pool.pending.load(.acquire);
    }
}

/// Spins while `word` holds `value`, for at most `spin_ns`; returns the word's last value.
fn spinWhile(word: *const std.atomic.Value(u32), value: u32) u32 {
    var now = value;
    const start = Io.Clock.awake.now(io()).nanoseconds;
    while (true) {
        for (0..64) |_| {
            now = word.load(.acquire);
            if (now != value) return now;
            std.atomic.spinLoopHint();
        }
        if (Io.Clock.awake.now(io()).nanoseconds - start >= spin_ns) return now;
    }
}

/// Claims and runs tasks of the current job until none are left.
fn drain(pool: *ThreadPool) void {
    while (true) {
        const i = pool.next.fetchAdd(1, .monotonic);
        if (i >= pool.tasks) return;
        pool.task(pool.context, i);
    }
}

/// Starts workers up to `count` and returns how many there are; a thread that fails to start leaves fewer
/// helpers, never a wrong result, because the caller drains every task itself if need be.
fn ensureWorkers(pool: *ThreadPool, count: u32) u32 {
    while (pool.workers_started < count) {
        const index = pool.workers_started;
        const thread = std.Thread.spawn(.{ .stack_size = 1 << 20 }, workerMain, .{ pool, index, pool.state.load(.monotonic) }) catch break;
        thread.detach();
        pool.workers_started += 1;
    }
    return @min(count, pool.workers_started);
}

fn workerMain(pool: *ThreadPool, index: u32, start_state: u32) void {
    var seen = start_state;
    while (true) {
        var now = spinWhile(&pool.state, seen);
        while (now == seen) {
            _ = pool.sleepers.fetchAdd(1, .seq_cst);
            if (pool.state.load(.seq_cst) == seen) io().futexWaitUncancelable(u32, &pool.state.raw, seen);
            _ = pool.sleepers.fetchSub(1, .monotonic);
            now = pool.state.load(.acquire);
        }
        seen = now;
        if (index >= now & 0xFF) continue;
        pool.drain();
        if (pool.pending.fetchSub(1, .seq_cst) == 1 and pool.caller_asleep.load(.seq_cst) != 0) {
            io().futexWake(u32, &pool.pending.raw, 1);
        }
    }
}

test "every task runs exactly once, whatever the thread count" {
    const Counter = struct {
        hits: [1000]std.atomic.Value(u32) = @splat(.init(0)),
        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const self: *@This() = @ptrCast(@alignCast(context));
            _ = self.hits[task].fetchAdd(1, .monotonic);
        }
    };
    for ([_]u32{ 1, 2, 3, 4, 8 }) |threads| {
        for (0..20) |_| {
            var counter: Counter = .{};
            global.parallelFor(&counter, counter.hits.len, threads, Counter.run);
            for (counter.hits) |hit| try std.testing.expectEqual(@as(u32, 1), hit.load(.monotonic));
        }
    }
}
