// Types of 'attnflow/node' (web/node.mjs): Node only.
import type { AttentionData, LoadOptions } from './index.js';

/** AttentionData read from a file on disk, which stays open until close(). */
export interface AttentionFile extends AttentionData {
  /**
   * Closes the file. Call it once the heads are fused (FusedAttention.create has read every
   * layer); layer(l) of a binary tensor throws E_INPUT after it. Safe to call more than once.
   */
  close(): void;
}

/**
 * Opens an attention file on disk (any format loadAttention reads, told from the content; the
 * file's name appears in messages unless options.name is given). A binary tensor (.npy, .npz,
 * safetensors, PyTorch .pt, .npy.gz) is read a
 * layer at a time when layer(l) asks, so a 400 MB file is never held whole; JSON is read whole.
 * Rejects with AttnflowError E_INPUT for a missing or unreadable file, E_FORMAT for bad content.
 */
export function openAttentionFile(path: string, options?: LoadOptions): Promise<AttentionFile>;
