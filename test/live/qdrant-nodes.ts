import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real Qdrant processes on loopback, started from a binary built from Qdrant's public repository
 * (`QDRANT_BIN`; docs/qdrant.md says which versions and how). One node, or a cluster whose first
 * node is the bootstrap peer of the others (Qdrant's distributed mode: HTTP, gRPC and p2p ports per
 * node). A node can be SIGKILLed and started again on its own storage, as a crashed machine would.
 */
export interface QdrantNode {
  url: string;
  p2p: number;
  storage: string;
  process: ChildProcess | undefined;
  log: string[];
}

export interface QdrantNodes {
  nodes: QdrantNode[];
  urls: string[];
  kill(i: number): Promise<void>;
  restart(i: number): Promise<void>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Polls `GET /readyz` until the node answers 200 (Qdrant's own readiness: consensus joined). */
export async function waitReady(url: string, attempts = 600): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Qdrant at ${url} did not become ready`);
}

export async function startQdrantNodes(bin: string, count: number): Promise<QdrantNodes> {
  const root = await mkdtemp(join(tmpdir(), 'kilde-qdrant-'));
  const nodes: QdrantNode[] = [];
  const ports: { http: number; grpc: number; p2p: number }[] = [];
  for (let i = 0; i < count; i++) {
    ports.push({ http: await freePort(), grpc: await freePort(), p2p: await freePort() });
  }
  const cluster = count > 1;
  const launch = (i: number, first: boolean) => {
    const node = nodes[i]!;
    const p = ports[i]!;
    const args = cluster
      ? [
          '--uri',
          `http://127.0.0.1:${p.p2p}`,
          // Peers 2..n join through the first; the first, restarted, finds the others in its state.
          ...(i > 0 && first ? ['--bootstrap', `http://127.0.0.1:${ports[0]!.p2p}`] : []),
        ]
      : [];
    const child = spawn(bin, args, {
      cwd: node.storage,
      env: {
        ...process.env,
        QDRANT__SERVICE__HOST: '127.0.0.1',
        QDRANT__SERVICE__HTTP_PORT: String(p.http),
        QDRANT__SERVICE__GRPC_PORT: String(p.grpc),
        QDRANT__CLUSTER__ENABLED: String(cluster),
        QDRANT__CLUSTER__P2P__PORT: String(p.p2p),
        QDRANT__STORAGE__STORAGE_PATH: join(node.storage, 'storage'),
        QDRANT__STORAGE__SNAPSHOTS_PATH: join(node.storage, 'snapshots'),
        QDRANT__TELEMETRY_DISABLED: 'true',
        QDRANT__LOG_LEVEL: 'WARN',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b: Buffer) => {
      node.log.push(b.toString('utf8'));
      if (node.log.length > 200) node.log.shift();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    node.process = child;
  };
  for (let i = 0; i < count; i++) {
    const storage = join(root, `node-${i}`);
    await mkdir(storage, { recursive: true });
    nodes.push({
      url: `http://127.0.0.1:${ports[i]!.http}`,
      p2p: ports[i]!.p2p,
      storage,
      process: undefined,
      log: [],
    });
  }
  // The first node founds the cluster; the others join it one at a time.
  for (let i = 0; i < count; i++) {
    launch(i, true);
    await waitReady(nodes[i]!.url);
  }
  const stop = async (node: QdrantNode, signal: NodeJS.Signals) => {
    const child = node.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
    node.process = undefined;
  };
  return {
    nodes,
    urls: nodes.map((n) => n.url),
    kill: (i) => stop(nodes[i]!, 'SIGKILL'),
    async restart(i) {
      launch(i, false);
      await waitReady(nodes[i]!.url);
    },
    async close() {
      for (const n of nodes) await stop(n, 'SIGTERM');
      await rm(root, { recursive: true, force: true });
    },
  };
}
