/** The model-facing description of Read. */
export const description = `Reads a file and returns its text with line numbers.

- file_path: the file to read, absolute or relative to the workspace. Files in the workspace and in the uploads folder (user attachments) can be read.
- offset: the 1-based line to start at (default 1). limit: how many lines to return (default 2000).
- Each line is shown as "<line number><TAB><text>". The number and the tab are not part of the file: never copy them into old_string or into file content.
- Very long lines are cut, with a marker. A large file is paged: the result ends with the offset to continue at. Read the part you need rather than the whole file.
- PNG, JPEG, GIF and WebP files are returned as images you can see. PDF files are returned as their extracted text, paged by lines like a text file.
- Binary files cannot be read, and neither can folders (list a folder with Bash, e.g. \`ls\`).
- Read runs in parallel with other Read and Image calls of the same turn: read several files at once when you need them.
- Read a file before you Edit it, so that old_string matches its current text exactly.`;
