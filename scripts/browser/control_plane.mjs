// Walks the control plane (/ui) of a running AgentOS in headless Chromium (Debian's, driven by
// playwright-core: no browser download), as its users would, and prints one JSON line with what
// each step saw. Any step that does not see what it waits for fails the walk (exit 1).
//
// Usage: node control_plane.mjs
//   AGNO_BASE        the OS (http://127.0.0.1:PORT)
//   ANN, BOB, ROOT   tokens: two users and an admin
//   SHOTS            directory for the screenshots (one per page)
//   CHROMIUM         the browser (default /usr/bin/chromium)
//   PLAYWRIGHT_CORE  where playwright-core is installed (default: resolved normally)
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const base = process.env.AGNO_BASE;
const shots = process.env.SHOTS;
const tokens = { ann: process.env.ANN, bob: process.env.BOB, root: process.env.ROOT };
if (!base || !shots || !tokens.ann || !tokens.bob || !tokens.root) {
  console.error("AGNO_BASE, SHOTS, ANN, BOB and ROOT are required");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const WAIT = 30000;
const seen = {};
const screenshots = [];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});

async function shot(page, name) {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  screenshots.push(`${name}.png`);
}

async function signIn(page, who) {
  await page.goto(`${base}/ui/`);
  await page.waitForURL(/\/ui\/sign-in/, { timeout: WAIT });
  await page.fill("#token", tokens[who]);
  await page.click("button[type=submit]");
  await page.getByRole("heading", { name: "Chat" }).waitFor({ timeout: WAIT });
}

async function signOut(page) {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/ui\/sign-in/, { timeout: WAIT });
}

// Sends `text` on the open chat page and waits for the answer bubble to hold `expect`.
async function say(page, text, expect) {
  const before = await page.locator("#transcript .msg.assistant").count();
  await page.fill("#message", text);
  await page.keyboard.press("Enter");
  const bubble = page.locator("#transcript .msg.assistant").nth(before);
  await bubble.waitFor({ timeout: WAIT });
  if (expect) await bubble.getByText(expect).first().waitFor({ timeout: WAIT });
  return bubble;
}

let failed = null;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => { seen.pageErrors = (seen.pageErrors || []).concat(String(e)); });

  // 1. Sign in as Ann; the start page lists what she may chat with.
  await signIn(page, "ann");
  seen.homeAgents = await page.locator(".card strong").allTextContents();
  await page.keyboard.press("Tab");
  seen.firstTab = await page.evaluate(() => document.activeElement && document.activeElement.textContent);
  await shot(page, "01-home");

  // 2. Chat: a streamed answer with a tool call.
  await page.getByRole("link", { name: "Helper" }).click();
  await page.getByRole("heading", { name: "Chat with Helper" }).waitFor({ timeout: WAIT });
  let bubble = await say(page, "What is 6 times 7?", "6 times 7 is 42");
  seen.toolCall = await bubble.locator(".tool code").first().textContent();
  seen.toolResult = await bubble.locator(".tool pre.result").first().textContent();
  seen.answer = await bubble.locator(".content").last().textContent();
  await shot(page, "02-chat");

  // 3. A call that needs confirming: the page asks, the user confirms, the run carries on.
  bubble = await say(page, "Add 2 and 3", "The run waits for your answer:");
  seen.pausedTool = await bubble.locator(".paused code").first().textContent();
  await shot(page, "03-paused");
  await bubble.getByRole("button", { name: "Confirm" }).click();
  await page.locator("#transcript .msg.assistant").last().getByText("2 plus 3 is 5").waitFor({ timeout: WAIT });
  seen.confirmedResult = await page.locator("#transcript .msg.assistant .tool pre.result").last().textContent();
  await shot(page, "04-confirmed");

  // 4. Markup sent through a run is shown as text, never run.
  bubble = await say(page, "<b>bold</b><script>window.__typed = 1</script>", "onerror");
  seen.escaped = {
    userText: await page.locator("#transcript .msg.user").last().textContent(),
    answerText: await bubble.locator(".content").last().textContent(),
    images: await page.locator("#transcript img").count(),
    bolds: await page.locator("#transcript b").count(),
    pwned: await page.evaluate(() => window.__pwned === 1 || window.__typed === 1),
  };

  // 4a. A call the user executes elsewhere: its result typed in the page, the run carries on.
  bubble = await say(page, "What is the square root of 81?", "The run waits for your answer:");
  await bubble.getByLabel("Result of square_root").fill("9 (computed by hand)");
  await bubble.getByRole("button", { name: "Send answer" }).click();
  await page.locator("#transcript .msg.assistant").last().getByText("the root is 9").waitFor({ timeout: WAIT });
  seen.externalAnswer = await page.locator("#transcript .msg.assistant").last().locator(".content").last().textContent();

  // 4b. A team (its member's answer in a box of its own) and a workflow (its steps).
  await page.goto(`${base}/ui/chat/teams/desk`);
  bubble = await say(page, "news", "the desk is done");
  seen.teamAnswer = await bubble.locator(":scope > .content").last().textContent();
  seen.teamMember = await bubble.locator(".member .content").first().textContent();
  await shot(page, "05-team");
  await page.goto(`${base}/ui/chat/workflows/pipeline`);
  bubble = await say(page, "a poem", "test model");
  seen.workflowSteps = await bubble.locator(".step").allTextContents();
  seen.workflowAnswer = await bubble.locator(".content").last().textContent();
  await shot(page, "06-workflow");
  // A workflow whose step waits for a review, and whose router asks for the route.
  await page.goto(`${base}/ui/chat/workflows/reviewed`);
  bubble = await say(page, "the news", "waits for your answer");
  seen.reviewAsked = await bubble.locator(".paused p.muted").first().textContent();
  await bubble.getByRole("button", { name: "Confirm" }).click();
  const routed = page.locator("#transcript .msg.assistant").last();
  await routed.getByText("waits for your answer").waitFor({ timeout: WAIT });
  seen.routeChoices = await routed.locator(".paused label").allTextContents();
  await routed.getByLabel("casual").check();
  await shot(page, "07-review");
  await routed.getByRole("button", { name: "Continue" }).click();
  const done = page.locator("#transcript .msg.assistant").last();
  await done.getByText("Step done: casual").waitFor({ timeout: WAIT });
  seen.reviewedSteps = await done.locator(".step").allTextContents();
  await page.goto(`${base}/ui/`);

  // 5. The session, the run, its trace with the waterfall.
  await page.getByRole("link", { name: "Sessions" }).click();
  await page.getByRole("heading", { name: "Sessions" }).waitFor({ timeout: WAIT });
  seen.annSessions = await page.locator("tbody tr").count();
  await shot(page, "08-sessions");
  await page.locator("tbody tr a").first().click();
  await page.getByRole("heading", { name: /^Session/ }).waitFor({ timeout: WAIT });
  seen.sessionRuns = await page.locator("tbody tr").count();
  await page.locator("tbody tr a").first().click();
  await page.getByRole("heading", { name: /^Run/ }).waitFor({ timeout: WAIT });
  await shot(page, "09-run");
  await page.getByRole("link", { name: "Open its trace" }).click();
  await page.getByRole("heading", { name: "Waterfall" }).waitFor({ timeout: WAIT });
  seen.waterfallBars = await page.locator(".wf-bar").count();
  seen.waterfallSpans = await page.locator(".wf-row:not(.wf-head) .wf-name").allTextContents();
  await shot(page, "10-trace");

  // 6. A run that needs an admin's approval: it pauses, and its approval waits.
  await page.goto(`${base}/ui/chat/agents/ops`);
  await say(page, "Add 1 and 1", "The run waits for your answer:");
  await signOut(page);

  // 7. The admin resolves it in the page.
  await signIn(page, "root");
  await page.getByRole("link", { name: "Approvals" }).click();
  await page.locator(".approval").first().waitFor({ timeout: WAIT });
  seen.pendingForAdmin = await page.locator(".approval").count();
  await shot(page, "11-approvals");
  await page.locator(".approval").first().getByRole("button", { name: "Approve" }).click();
  await page.getByText("No pending approvals.").waitFor({ timeout: WAIT });
  await page.getByRole("link", { name: "approved" }).click();
  seen.approvedStatus = await page.locator(".approval h2").first().textContent();

  // 8. Schedules: created, run now, its run listed.
  await page.getByRole("link", { name: "Schedules" }).click();
  await page.fill("#s-name", "nightly-digest");
  await page.fill("#s-cron", "0 3 * * *");
  await page.fill("#s-endpoint", "/agents/helper/runs");
  await page.fill("#s-message", "scheduled hello");
  await page.getByRole("button", { name: "Create" }).click();
  await page.getByRole("heading", { name: "Schedule nightly-digest" }).waitFor({ timeout: WAIT });
  await page.getByRole("button", { name: "Run now" }).click();
  const deadline = Date.now() + WAIT;
  for (;;) {
    const statuses = await page.locator("table.schedule-runs td.status").allTextContents();
    if (statuses.some((s) => s === "success")) { seen.scheduleRun = statuses; break; }
    if (Date.now() > deadline) throw new Error(`the schedule's run never succeeded: ${JSON.stringify(statuses)}`);
    await page.waitForTimeout(200);
    await page.reload();
  }
  await page.getByRole("button", { name: "Disable" }).click();
  await page.getByRole("button", { name: "Enable" }).waitFor({ timeout: WAIT });
  seen.scheduleDisabled = (await page.locator("dl.facts dd").nth(3).textContent()).trim();
  await page.getByRole("button", { name: "Enable" }).click();
  await page.getByRole("button", { name: "Disable" }).waitFor({ timeout: WAIT });
  await shot(page, "12-schedule");
  await page.getByRole("link", { name: "Metrics" }).click();
  await page.getByRole("heading", { name: "Metrics" }).waitFor({ timeout: WAIT });
  await shot(page, "13-metrics");

  // 9. Knowledge: a text uploaded in the page, ingested in the background, then found.
  await page.getByRole("link", { name: "Knowledge" }).click();
  await page.fill("#k-name", "office-hours");
  await page.fill("#k-text", "The office opens at nine and closes at five.");
  await page.getByRole("button", { name: "Upload" }).click();
  const ingested = Date.now() + WAIT;
  for (;;) {
    const statuses = await page.locator("tbody td.status").allTextContents();
    if (statuses.some((s) => s.startsWith("completed"))) { seen.knowledgeStatus = statuses; break; }
    if (Date.now() > ingested) throw new Error(`the upload was never ingested: ${JSON.stringify(statuses)}`);
    await page.waitForTimeout(200);
    await page.reload();
  }
  await page.fill("#kq", "office");
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByRole("heading", { name: "Results" }).waitFor({ timeout: WAIT });
  seen.knowledgeHits = await page.locator("ol.results li").allTextContents();
  await shot(page, "14-knowledge");

  // 10. The components registry: a draft published from the page, then the earlier version
  // served again (a rollback).
  await page.getByRole("link", { name: "Components" }).click();
  await page.getByRole("link", { name: "Support Bot" }).click();
  await page.getByRole("button", { name: "Publish" }).click();
  await page.getByText("2 (serving)").waitFor({ timeout: WAIT });
  seen.componentStages = await page.locator("table.versions td.stage").allTextContents();
  await page.getByRole("button", { name: "Serve this version" }).click();
  await page.getByText("1 (serving)").waitFor({ timeout: WAIT });
  seen.componentServing = await page.locator("dl.facts dd").nth(2).textContent();
  await shot(page, "15-component");

  // 11. The durable queue, for the admin: the ingestion's job.
  await page.getByRole("link", { name: "Queue" }).click();
  await page.getByRole("heading", { name: "Queue" }).waitFor({ timeout: WAIT });
  seen.queueJobs = await page.locator("tbody td.status").allTextContents();
  await shot(page, "16-queue");
  await page.getByRole("link", { name: "Learnings" }).click();
  await page.getByRole("heading", { name: "Learnings" }).waitFor({ timeout: WAIT });
  await page.getByRole("link", { name: "Evals" }).click();
  await page.getByRole("heading", { name: "Evals" }).waitFor({ timeout: WAIT });
  await signOut(page);

  // 12. Bob sees none of Ann's sessions, traces or approvals.
  await signIn(page, "bob");
  await page.getByRole("link", { name: "Sessions" }).click();
  await page.getByRole("heading", { name: "Sessions" }).waitFor({ timeout: WAIT });
  seen.bobSessions = await page.locator("tbody tr").count();
  seen.bobNav = await page.locator("header nav li a").allTextContents();
  await shot(page, "17-bob-sessions");
  await page.getByRole("link", { name: "Traces" }).click();
  await page.getByRole("heading", { name: "Traces" }).waitFor({ timeout: WAIT });
  seen.bobTraces = await page.locator("tbody tr").count();
  await page.getByRole("link", { name: "Approvals" }).click();
  await page.getByRole("heading", { name: "Approvals" }).waitFor({ timeout: WAIT });
  await page.getByRole("link", { name: "all" }).click();
  await page.getByRole("heading", { name: "Approvals" }).waitFor({ timeout: WAIT });
  seen.bobApprovals = await page.locator(".approval").count();

  // 13. A phone's width: nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/ui/sessions`);
  seen.phoneOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot(page, "18-phone");
  await signOut(page);

  // 14. Ann's trace at a phone's width.
  await signIn(page, "ann");
  await page.goto(`${base}/ui/traces`);
  await page.locator("tbody tr a").first().click();
  await page.getByRole("heading", { name: "Waterfall" }).waitFor({ timeout: WAIT });
  seen.phoneTraceOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot(page, "19-phone-trace");
} catch (e) {
  failed = String(e && e.stack ? e.stack : e);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ok: failed === null, failed, seen, screenshots }));
process.exit(failed === null ? 0 : 1);
