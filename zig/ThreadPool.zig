//! A small persistent pool of worker threads for `parallel_for`. Workers are started lazily, up to the
//! largest thread count asked for. Between jobs a worker first spins for `spin_ns` (so that a job that
//! follows soon, as the calls of a training step do, starts without a futex wake-up, which costs tens of
//! microseconds on a virtual machine), then sleeps on a futex; the caller wakes sleepers only when there are
//! any, and spins the same way before it sleeps waiting for its tasks. The caller takes part in its own job.
//! One job runs at a time; a caller that finds the pool busy (another JS worker, say) runs its tasks itself,
//! which changes nothing in the results: each task writes its own outputs in a fixed order.
//!
//! The caller waits for its job's tasks, not for the helpers it woke: a helper that wakes late (asleep, or
//! descheduled by other load) after the caller drained every task itself costs the caller nothing, and finds
//! nothing to claim, in this job or, if it is later still, in the next (`claim` is one word). The caller
//! claims tasks from the front and the helpers from the back, so on two threads a streaming op's caller
//! runs its first part and the helper its last, the same halves call after call, each in its own core's
//! cache.
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
/// The current job's task and context, written only while no task is claimable or running, and read by a
/// thread only after it claimed a task (its claim synchronizes with the store that opened the job).
task: table.TaskFn = undefined,
context: *anyopaque = undefined,
/// The current job's unclaimed tasks `front..back`: front in the low 32 bits (the caller claims there),
/// back in the high 32 (the helpers claim below it); none are left when front ≥ back.
claim: std.atomic.Value(u64) = .init(0),
/// Tasks of the current job not yet finished.
remaining: std.atomic.Value(u32) = .init(0),
/// Jobs run with helper threads since load (what tests read to know the threaded path ran).
jobs: std.atomic.Value(u32) = .init(0),
/// Workers asleep on `state`, or about to be: a new job wakes them only when this is nonzero.
sleepers: std.atomic.Value(u32) = .init(0),
/// Whether the caller sleeps on `remaining` (or is about to): the helper that finishes the last task wakes
/// it only then.
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
    pool.remaining.store(tasks, .monotonic);
    // Release: a thread whose claim reads this job's word sees the task, the context and `remaining`.
    pool.claim.store(@as(u64, tasks) << 32, .release);
    _ = pool.jobs.fetchAdd(1, .monotonic);
    const job = (pool.state.load(.monotonic) >> 8) +% 1;
    // Sequentially consistent, as the sleepers' count below and in workerMain: either the caller sees a
    // worker's count or the worker sees the new state (and its futex wait returns at once).
    pool.state.store((job << 8) | helpers, .seq_cst);
    if (pool.sleepers.load(.seq_cst) > 0) io().futexWake(u32, &pool.state.raw, std.math.maxInt(u32));
    const ran = pool.drain(.front);
    var left = pool.remaining.fetchSub(ran, .acq_rel) - ran;
    if (left != 0) left = spinWhile(&pool.remaining, left);
    while (left != 0) {
        pool.caller_asleep.store(1, .seq_cst);
        left = pool.remaining.load(.seq_cst);
        if (left != 0) io().futexWaitUncancelable(u32, &pool.remaining.raw, left);
        pool.caller_asleep.store(0, .monotonic);
        left = pool.remaining.load(.acquire);
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

/// Claims tasks of the current job, from `end`, and runs them until none are left; returns how many it ran.
/// A claim is a compare-and-swap of the whole word: one that succeeds took a task of the job open at that
/// moment, whichever job the thread was woken for.
fn drain(pool: *ThreadPool, comptime end: enum { front, back }) u32 {
    var ran: u32 = 0;
    var word = pool.claim.load(.monotonic);
    while (true) {
        const front: u32 = @truncate(word);
        const back: u32 = @truncate(word >> 32);
        if (front >= back) return ran;
        const claimed = if (end == .front) word + 1 else word - (1 << 32);
        if (pool.claim.cmpxchgWeak(word, claimed, .acquire, .monotonic)) |now| {
            word = now;
            continue;
        }
        pool.task(pool.context, if (end == .front) front else back - 1);
        ran += 1;
        word = pool.claim.load(.monotonic);
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
        const ran = pool.drain(.back);
        if (ran != 0 and pool.remaining.fetchSub(ran, .seq_cst) == ran and pool.caller_asleep.load(.seq_cst) != 0) {
            io().futexWake(u32, &pool.remaining.raw, 1);
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

test "back-to-back jobs of changing sizes run each task once, with late helpers finding nothing of another job" {
    const Marks = struct {
        job: u32,
        hits: [17]std.atomic.Value(u32) = @splat(.init(0)),
        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const self: *@This() = @ptrCast(@alignCast(context));
            _ = self.hits[task].fetchAdd(self.job, .monotonic);
        }
    };
    for (0..3000) |round| {
        const tasks: u32 = @intCast(1 + round % 17);
        var marks: Marks = .{ .job = @intCast(round + 1) };
        global.parallelFor(&marks, tasks, @intCast(2 + round % 3), Marks.run);
        for (marks.hits, 0..) |hit, i| {
            try std.testing.expectEqual(if (i < tasks) marks.job else 0, hit.load(.monotonic));
        }
    }
}
