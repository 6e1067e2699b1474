/** The model-facing description of Write. */
export const description = `Writes a file: creates it, or replaces all of its content. Missing parent folders are created.

- file_path: the file to write, absolute or relative to the workspace. Only files inside the workspace can be written; the uploads folder is read-only.
- content: the complete new content of the file.
- To change part of an existing file, prefer Edit: it sends only the change and cannot drop the rest of the file by accident. Read a file before you overwrite it.
- Never put Read's line-number prefixes into content.`;
