/** The model-facing description of Image. */
export const description = `Loads an image file so that you can see it, and shows it to the user as a preview.

- file_path: the image, absolute or relative to the workspace. Images in the workspace and in the uploads folder (user attachments) can be loaded.
- PNG, JPEG, GIF and WebP are supported, up to 5 MB by default.
- Image runs in parallel with other Image and Read calls of the same turn.`;
