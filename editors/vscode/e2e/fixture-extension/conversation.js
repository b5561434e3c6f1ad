// A coding conversation of `turns` user/assistant/tool rounds with about
// `toolChars` characters of tool output each. Shared by the protocol tests
// and the end-to-end fixture extension.

function conversation(turns, toolChars = 1200) {
  const messages = [];
  for (let i = 1; i <= turns; i++) {
    messages.push({ role: 'user', content: `Step ${i}: fix the failing test in src/module${i}.rs and explain why it failed.` });
    messages.push({
      role: 'assistant',
      content: `Reading src/module${i}.rs.`,
      toolCalls: [{ id: `call${i}`, name: 'read', arguments: { path: `src/module${i}.rs` } }],
    });
    const line = `fn item_${i}(x: u64) -> u64 { x.wrapping_mul(${i}) + ${i * 7} } // module ${i}\n`;
    messages.push({ role: 'tool', toolCallId: `call${i}`, toolName: 'read', content: line.repeat(Math.ceil(toolChars / line.length)) });
    messages.push({ role: 'assistant', content: `Fixed item_${i}: the multiplier overflowed, so it now wraps.` });
  }
  return messages;
}

module.exports = { conversation };
