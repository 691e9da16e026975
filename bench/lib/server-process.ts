import { spawn } from 'node:child_process';

/**
 * A server in a child process of its own: its output is watched for the line `ready` matches (its
 * first group, the URL, resolves `url`), then drained, since a full pipe would stall the child.
 * `output()` is the last 20,000 characters it wrote.
 */
export function spawnServer(cmd: string[], env: NodeJS.ProcessEnv, ready: RegExp, name: string) {
  const child = spawn(cmd[0]!, cmd.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const url = new Promise<string>((resolve, reject) => {
    const watch = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-20_000);
      const m = ready.exec(tail);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', watch);
    child.stderr!.on('data', watch);
    child.on('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready:\n${tail}`)));
  });
  return { child, url, output: () => tail };
}
