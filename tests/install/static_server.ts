// A static file server for the JSR install test: serves the folder `argv[0]` on 127.0.0.1:`argv[1]` the way JSR
// serves a package's files (TypeScript with its media type), until it is killed.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import process from "node:process";

const [root, port] = process.argv.slice(-2);
const types: Record<string, string> = {
  ".ts": "application/typescript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
};

createServer(async (request, response) => {
  const path = normalize(decodeURIComponent(new URL(request.url ?? "/", "http://localhost").pathname));
  if (path.includes("..")) return response.writeHead(400).end();
  try {
    const bytes = await readFile(join(root, path));
    response.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(
      bytes,
    );
  } catch {
    response.writeHead(404).end();
  }
}).listen(Number(port), "127.0.0.1");
