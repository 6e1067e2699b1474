/** The model-facing description of Edit. */
export const description = `Edits a file by exact string replacement: old_string is replaced with new_string.

- file_path: the file to edit, absolute or relative to the workspace. It must exist (use Write to create a file).
- old_string: text copied exactly from the file, whitespace and indentation included, without Read's line-number prefixes. Read the file first.
- new_string: the replacement. It must differ from old_string; an empty new_string deletes old_string.
- old_string must occur exactly once, or the edit fails: add surrounding lines to make it unique. To change every occurrence (e.g. renaming a variable), pass replace_all: true.
- If old_string is not found, the file is unchanged: Read it again and copy the current text.
- The result shows the edited lines with their numbers.`;
