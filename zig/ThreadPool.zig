//! A small persistent pool of worker threads for `parallel_for`. Workers are started lazily, up to the
//! largest thread count asked for, and sleep on a futex between jobs. The caller takes part in its own job.
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
    pool.state.store((job << 8) | helpers, .release);
    io().futexWake(u32, &pool.state.raw, std.math.maxInt(u32));
    pool.drain();
    while (true) {
        const left = pool.pending.load(.acquire);
        if (left == 0) break;
        io().futexWaitUncancelable(u32, &pool.pending.raw, left);
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
        var now = pool.state.load(.acquire);
        while (now == seen) {
            io().futexWaitUncancelable(u32, &pool.state.raw, seen);
            now = pool.state.load(.acquire);
        }
        seen = now;
        if (index >= now & 0xFF) continue;
        pool.drain();
        if (pool.pending.fetchSub(1, .acq_rel) == 1) io().futexWake(u32, &pool.pending.raw, 1);
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
