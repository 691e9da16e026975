import { z } from 'zod';
import { kernelPieces, llmPiece } from './shared.js';
import { mcpPiece } from './tools.js';

export const kernelSchema = z.object(kernelPieces);
export type KernelConfig = z.output<typeof kernelSchema>;

export const agentSchema = z.object({ ...kernelPieces, ...llmPiece, ...mcpPiece('agent') });
export type AgentConfig = z.output<typeof agentSchema>;
