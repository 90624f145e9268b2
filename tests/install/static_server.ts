// A static file server for the JSR install test: serves the folder `Deno.args[0]` on 127.0.0.1:`Deno.args[1]`,
// the way JSR serves a package's files, and prints "listening" once it accepts connections.
import { extname, join, normalize } from "node:path";

const [root, port] = Deno.args;
const types: Record<string, string> = {
  ".ts": "application/typescript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
};

Deno.serve(
  { hostname: "127.0.0.1", port: Number(port), onListen: () => console.log("listening") },
  async (request) => {
    const path = normalize(decodeURIComponent(new URL(request.url).pathname));
    if (path.includes("..")) return new Response("bad path", { status: 400 });
    try {
      const bytes = await Deno.readFile(join(root, path));
      return new Response(bytes, {
        headers: { "content-type": types[extname(path)] ?? "application/octet-stream" },
      });
    } catch {
      return new Response("not found", { status: 404 });
    }
  },
);
