import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';

let llm: FakeChatServer;
beforeAll(async () => {
  llm = await startFakeChatServer();
});
afterAll(() => llm.close());

/** Starts the built CLI and resolves with its address once it logs "kilde listening". */
async function startAgent(): Promise<{ child: ChildProcess; url: string; lines: string[] }> {
  const child = spawn(process.execPath, ['bin/kilde.js', 'serve', 'agent'], {
    env: {
      ...process.env,
      API_KEY: 'k',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_FORMAT: 'json',
      AGENT_API_BASE_URL: llm.baseUrl,
      SHUTDOWN_GRACE: '10',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const parsed = JSON.parse(line) as { msg?: string; address?: string };
        if (parsed.msg === 'kilde listening' && parsed.address) resolve(parsed.address);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
  return { child, url, lines };
}

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the in-flight request, then exits 0', async () => {
    const { child, url, lines } = await startAgent();
    llm.mode = { kind: 'slow', delayMs: 1500 };
    const inflight = fetch(`${url}/echo`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'a slow request' }),
    });
    // Let the request reach the LLM before the signal.
    while (!llm.requests.some((r) => r.path === '/v1/chat/completions'))
      await new Promise((r) => setTimeout(r, 20));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ original: 'a slow request', rewritten: 'late' });
    const [code] = await exited;
    expect(code).toBe(0);
    expect(lines.join('\n')).toMatch(/shutting down: draining in-flight requests/);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });
});
