//! Keeps the library in memory once loaded. Deno unloads a library (dlclose) when the isolate that opened it
//! ends, for example between test files; the thread pool's workers would outlive the code they run, and a
//! reload at the same address would meet them with stale state. Re-opening ourselves with RTLD_NODELETE makes
//! the first load the last.
const std = @import("std");
const builtin = @import("builtin");

const DlInfo = extern struct {
    fname: ?[*:0]const u8,
    fbase: ?*anyopaque,
    sname: ?[*:0]const u8,
    saddr: ?*anyopaque,
};

extern "c" fn dladdr(address: *const anyopaque, info: *DlInfo) c_int;

// GET_MODULE_HANDLE_EX_FLAG_PIN | GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: Windows' NODELETE.
const pin_from_address: u32 = 0x1 | 0x4;
extern "kernel32" fn GetModuleHandleExW(flags: u32, address: *const anyopaque, module: *?*anyopaque) callconv(.winapi) c_int;

var pinned = std.atomic.Value(bool).init(false);

/// Pins the shared library that holds this code; idempotent, and a no-op where the loader has no NODELETE.
pub fn pinInMemory() void {
    if (comptime builtin.os.tag == .windows) {
        if (pinned.swap(true, .acq_rel)) return;
        var module: ?*anyopaque = null;
        _ = GetModuleHandleExW(pin_from_address, @ptrCast(&pinInMemory), &module);
        return;
    }
    if (comptime !(builtin.os.tag == .linux or builtin.os.tag.isDarwin())) return;
    if (pinned.swap(true, .acq_rel)) return;
    var info: DlInfo = undefined;
    if (dladdr(@ptrCast(&pinInMemory), &info) == 0) return;
    const name = info.fname orelse return;
    _ = std.c.dlopen(name, .{ .NOW = true, .NOLOAD = true, .NODELETE = true });
}
