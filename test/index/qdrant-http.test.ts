import { describe, expect, it } from 'vitest';
import { qdrantBaseUrl } from '../../src/index/qdrant-http.js';

describe('qdrantBaseUrl', () => {
  it('defaults to port 6333 like the official Qdrant clients', () => {
    expect(qdrantBaseUrl('http://qdrant')).toBe('http://qdrant:6333');
    expect(qdrantBaseUrl('https://db.example.com/')).toBe('https://db.example.com:6333');
    expect(qdrantBaseUrl('http://[::1]')).toBe('http://[::1]:6333');
  });

  it('keeps an explicit port, even the scheme default, and a path prefix', () => {
    expect(qdrantBaseUrl('http://127.0.0.1:6334')).toBe('http://127.0.0.1:6334');
    expect(qdrantBaseUrl('https://proxy.example.com:443/qdrant/')).toBe(
      'https://proxy.example.com:443/qdrant',
    );
    expect(qdrantBaseUrl('http://localhost:80')).toBe('http://localhost:80');
    expect(qdrantBaseUrl('http://[::1]:7000/')).toBe('http://[::1]:7000');
  });
});
