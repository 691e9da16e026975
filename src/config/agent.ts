import { z } from 'zod';
import { kernelPieces, llmPiece } from './shared.js';
import { mcpPiece } from './tools.js';

export const agentSchema = z.object({ ...kernelPieces, ...llmPiece, ...mcpPiece('agent') });
export type AgentConfig = z.output<typeof agentSchema>;
