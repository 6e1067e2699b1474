/** The model-facing description of AskUserQuestion. */
export const description = `Asks the user one to four multiple-choice questions and waits for the answers. Use it when you need the user's decision to go on (a choice between approaches, a preference, a missing requirement), not for things you can find out yourself.

- questions: 1-4 questions. Each has a prompt (the full question), an optional header (a 1-3 word tab label) and an optional id (default q1, q2, ... by position).
- options: 2-6 short, distinct choices per question, each with a label and an optional one-line description. Every question in one call must have the same number of options, and labels must be unique within a question.
- Mark at most one option per question as recommended: it is shown first, and it is taken if the user does not answer in time.
- Do NOT add catch-all options such as "Other", "Something else" or "None of the above": the user can always type their own answer instead of picking an option.
- The result says whether the user answered, the question timed out (the recommended options were taken as defaults), or it was cancelled (no choice made). A typed answer is marked as typed.
- Ask only what you need, and ask it once: do not repeat a question the user already answered.`;
