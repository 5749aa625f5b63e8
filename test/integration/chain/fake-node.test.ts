import { defineChainScenarios } from './scenarios.ts';
import { startFakeNode } from './nodes.ts';

defineChainScenarios('fake', startFakeNode);
