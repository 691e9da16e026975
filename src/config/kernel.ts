import { z } from 'zod';
import { kernelPieces } from './shared.js';

/** What the HTTP kernel reads (bind address, inbound key, logging, metrics); every service's schema includes it. */
export const kernelSchema = z.object(kernelPieces);
export type KernelConfig = z.output<typeof kernelSchema>;
