const repo = process.argv[2];
const token = process.env.GITHUB_TOKEN;

async function main() {
  const res = await fetch(`https://api.github.com/repos/${repo}/issues`, {
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/vnd.github+json' },
  });
  const issues = await res.json();
  for (const i of issues) console.log(`#${i.number} ${i.title}`);
}

main();
