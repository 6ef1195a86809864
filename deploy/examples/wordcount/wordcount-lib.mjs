// Shared by the word-count workers and the demo's check: how text splits into words and how a
// word picks its reducer.
export function words(line) {
  return (line ?? '').toLowerCase().match(/[a-z][a-z']*/g) ?? [];
}

export function partitionOf(word, reducers) {
  let h = 0;
  for (let i = 0; i < word.length; i++) h = (h * 31 + word.charCodeAt(i)) >>> 0;
  return h % reducers;
}
